// Recording rules that give the cluster-wide view: one series per cluster and key. Named
// level:metric:operations (https://prometheus.io/docs/practices/rules/). The per-key series
// are bounded by the daemon's top-K, so these stay cheap whatever the key cardinality.
{
  prometheusRules+:: {
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
    ],
  },
}
