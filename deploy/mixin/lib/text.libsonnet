{
  // fold(s): the text of a YAML folded block scalar (`>-`): the lines of s joined by single
  // spaces, without a trailing newline. Annotations are written as ||| blocks for
  // readability and folded into the one-line strings Alertmanager receives.
  fold(s):: std.join(' ', std.filter(function(l) l != '', std.split(s, '\n'))),

  // percent(ratio): 0.8 -> "80" (rounded to a whole percent).
  percent(ratio):: std.toString(std.floor(ratio * 100 + 0.5)),

  // The target a description speaks of: "shard S (instance)" when the target has a shard
  // label, else the instance. A Go template, expanded by Prometheus.
  target:: '{{ with $labels.shard }}shard {{ . }} ({{ end }}{{ $labels.instance }}{{ with $labels.shard }}){{ end }}',

  // The Redis Cluster node a description speaks of: "node N (instance)" when the target has
  // a node label (scrape.yml's host:port of the Redis node), else the instance.
  node:: '{{ with $labels.node }}node {{ . }} ({{ end }}{{ $labels.instance }}{{ with $labels.node }}){{ end }}',
}
