// The tunables of the hotkeyd mixin. Every number the alerts and the dashboard use is here;
// the alert descriptions quote them, so they stay true when overridden.
{
  _config+:: {
    // Selects the hotkeyd scrape targets' `up` series for HotkeydDown. The other rules use
    // hotkeyd's own metric names, which no other exporter exports, and match every job.
    hotkeydSelector: 'job="hotkeyd"',

    // Page level of the projected load with no fix, as a fraction of the shard's capacity:
    // the model's default target (--cluster.target). Keep it equal to the daemon's
    // --cluster.target, or at 1 if that target is above 1 (the page means "over the target
    // or over capacity", whichever is lower).
    pageLoadRatio: 0.8,
    // Window of avg_over_time on that projected load: one low or high scrape moves the
    // average a little instead of flipping the condition.
    projectedLoadWindow: '2m',
    // Seconds without any event, on a target that had events, before the feed is silent.
    feedSilentSeconds: 600,
    // Rejected fraction of events/datagrams above which the clients are misbehaving.
    rejectedRatio: 0.05,
    // Range of the rate() windows of the rejected and kernel-drop alerts.
    rateWindow: '5m',

    // `for:` and `keep_firing_for:`: production values. Tests that need them shorter use
    // deploy/prometheus/shorten-for.sh on the generated file; promtool unit tests simulate
    // time and need no shortening.
    hotKeyFor: '2m',
    hotKeyKeepFiringFor: '5m',
    downFor: '1m',
    droppingFor: '10m',
    kernelDropsFor: '10m',
    reloadFailedFor: '5m',

    // Runbooks: this URL followed by the lower-cased alert name.
    runbookURLBase: 'https://github.com/hotkeyd/hotkeyd/blob/main/deploy/README.md#',

    // The dashboard.
    dashboardUid: 'hotkeyd-hot-keys',
    dashboardTitle: 'hotkeyd: hot keys',
    dashboardTags: ['hotkeyd', 'redis', 'hot-keys'],
    dashboardRefresh: '30s',
    dashboardTimeFrom: 'now-1h',
    // How many keys the top-K panels show.
    dashboardTopK: 10,
    // How many nodes, slots, tags and keys per cluster the cluster-wide recording rules
    // keep (topk by (cluster)); the dashboard's cluster row shows dashboardTopK of them.
    clusterTopK: 20,
  },
}
