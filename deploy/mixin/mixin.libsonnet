// The hotkeyd monitoring mixin (https://monitoring.mixins.dev layout).
//
//   prometheusAlerts    the alerting rules      (alerts/alerts.libsonnet)
//   prometheusRules     the recording rules     (rules/rules.libsonnet)
//   grafanaDashboards   {"hotkeyd-dashboard.json": ...}  (dashboards/hotkeyd.libsonnet)
//   _config             selectors, thresholds, durations   (config.libsonnet)
//
// Use it as any mixin, overriding _config:
//   local hotkeyd = (import 'deploy/mixin/mixin.libsonnet') + {
//     _config+:: { hotkeydSelector: 'job="redis-hotkeyd"', pageLoadRatio: 1 },
//   };
//   hotkeyd.prometheusAlerts   // etc.
// The files shipped in deploy/prometheus/hotkeyd.rules.yml and
// deploy/grafana/hotkeyd-dashboard.json are this mixin with the defaults, written by
// deploy/mixin/generate.sh (ctest deploy_mixin_generated fails when they are stale).
(import 'config.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'dashboards/hotkeyd.libsonnet')
