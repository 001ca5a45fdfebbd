// Recording rules that give the cluster-wide view: per cluster and key, and (group
// hotkeyd.cluster) the hottest nodes, slots, tags and keys of a Redis Cluster. Named
// level:metric:operations (https://prometheus.io/docs/practices/rules/). The per-key series
// are bounded by the daemon's top-K, so these stay cheap whatever the key cardinality.
{
  prometheusRules+:: {
    local k = std.toString($._config.clusterTopK),
    // topk(expr): the clusterTopK largest series of expr in each cluster.
    local topk(expr) = 'topk by (cluster) (' + k + ', ' + std.rstripChars(expr, '\n') + ')',
    groups+: [
      {
        name: 'hotkeyd.recording',
        rules: [
          // Cluster-wide ops/s of each key, summed over the shards that report it. A key
          // normally lives on one shard; it shows up on several only when replicated or split.
          {
            record: 'cluster_key:hotkey_key_ops_per_second:sum',
            expr: 'sum by (cluster, key) (hotkey_key_ops_per_second)',
          },
          // The busiest shard's share for each key: the number the per-shard alert compares.
          {
            record: 'cluster_key:hotkey_key_share_ratio:max',
            expr: 'max by (cluster, key) (hotkey_key_share_ratio)',
          },
          // 1 when the key is in a hot episode on any shard: "which key is hot anywhere".
          {
            record: 'cluster_key:hotkey_key_hot:max',
            expr: 'max by (cluster, key) (hotkey_key_hot)',
          },
          // Cluster total ops/s and number of hot keys, the denominators of the above.
          {
            record: 'cluster:hotkey_ops_per_second:sum',
            expr: 'sum by (cluster) (hotkey_ops_per_second)',
          },
          {
            record: 'cluster:hotkey_hot_keys:sum',
            expr: 'sum by (cluster) (hotkey_hot_keys)',
          },
          // Each key's share of the whole cluster's ops/s (0..1): the key's ops summed over
          // shards over the cluster's total. Where hotkey_key_share_ratio is a key's share of
          // one shard, this is the figure the shard load model takes as h. Clusters with no
          // traffic are left out (no division by zero). After the two rules it divides, which
          // the group evaluates first.
          {
            record: 'cluster_key:hotkey_key_ops_per_cluster_ops:ratio',
            expr: 'cluster_key:hotkey_key_ops_per_second:sum / on (cluster) group_left () (cluster:hotkey_ops_per_second:sum > 0)',
          },
        ],
      },
      // The cluster-wide view of a Redis Cluster with one hotkeyd per node: the hottest
      // nodes, slots, tags and keys of each cluster. Every key, slot and tag lives on
      // exactly one node, so Prometheus joining the nodes' series is the whole view; no
      // hotkeyd needs another's counts. Each rule keeps `node` (the scrape's target label,
      // host:port of the Redis node; without it the nodes of a cluster would add up into
      // one) and is bounded by topk per cluster (_config.clusterTopK), whatever the number
      // of nodes: the per-node series are already bounded by each daemon's top_k.
      {
        name: 'hotkeyd.cluster',
        rules: [
          // Nodes: the ops/s hotkeyd counts on each node (the unit of the slot, tag and key
          // rates below), the CPU the node's command thread used, and its load over the
          // model's capacity (the shard's own commands/s over capacity_ops_per_second: the
          // `load_before` of /api/v1/slots's move plan, and what the slot page compares).
          {
            record: 'cluster_node:hotkey_ops_per_second:topk',
            expr: topk('sum by (cluster, node) (hotkey_ops_per_second)'),
          },
          {
            record: 'cluster_node:hotkey_shard_cpu_busy_ratio:topk',
            expr: topk('max by (cluster, node) (hotkey_shard_cpu_busy_ratio)'),
          },
          {
            record: 'cluster_node:hotkey_shard_load_ratio:topk',
            expr: topk('max by (cluster, node) (hotkey_shard_commands_per_second / ignoring (input, origin) (hotkey_model_input{input="capacity_ops_per_second"} > 0))'),
          },
          // Slots: each hot or top slot's share of its node's ops and its ops/s. A slot is
          // served by one node, so `max`/`sum` by (cluster, node, slot) only drop job and
          // instance.
          {
            record: 'cluster_node_slot:hotkey_slot_share_ratio:topk',
            expr: topk('max by (cluster, node, slot) (hotkey_slot_share_ratio)'),
          },
          {
            record: 'cluster_node_slot:hotkey_slot_ops_per_second:topk',
            expr: topk('sum by (cluster, node, slot) (hotkey_slot_ops_per_second)'),
          },
          // The hot slots and the daemon's advice for each (`key`, `tag` or `move`), one series per
          // hot slot: bounded by the daemon's top_k per node.
          {
            record: 'cluster_node_slot:hotkey_slot_advice_info:max',
            expr: 'max by (cluster, node, slot, advice) (hotkey_slot_advice_info == 1 and ignoring (advice) hotkey_slot_hot == 1)',
          },
          // Tags: the hash tags (with their slot) carrying most of a node's ops.
          {
            record: 'cluster_node_tag:hotkey_tag_share_ratio:topk',
            expr: topk('max by (cluster, node, tag, slot) (hotkey_tag_share_ratio)'),
          },
          {
            record: 'cluster_node_tag:hotkey_tag_ops_per_second:topk',
            expr: topk('sum by (cluster, node, tag, slot) (hotkey_tag_ops_per_second)'),
          },
          // Keys, with the node that serves them (cluster_key:* above sums a key over
          // shards and drops the node).
          {
            record: 'cluster_node_key:hotkey_key_share_ratio:topk',
            expr: topk('max by (cluster, node, key) (hotkey_key_share_ratio)'),
          },
          {
            record: 'cluster_node_key:hotkey_key_ops_per_second:topk',
            expr: topk('sum by (cluster, node, key) (hotkey_key_ops_per_second)'),
          },
          // How many slots and tags are hot in each cluster now.
          {
            record: 'cluster:hotkey_hot_slots:sum',
            expr: 'sum by (cluster) (hotkey_hot_slots)',
          },
          {
            record: 'cluster:hotkey_hot_tags:sum',
            expr: 'sum by (cluster) (hotkey_hot_tags)',
          },
        ],
      },
    ],
  },
}
