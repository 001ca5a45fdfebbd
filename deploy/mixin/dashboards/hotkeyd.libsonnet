// The Grafana dashboard "hotkeyd: hot keys": hot keys per shard and cluster-wide, the
// advised fix, and hotkeyd's own health. Queries use only hotkeyd's exported metrics, the
// recording rules of rules/rules.libsonnet, up and ALERTS (checked by
// tests/deploy/check_dashboard_metrics.py on the generated JSON). Written as plain Grafana
// JSON (schemaVersion 38) with a few helpers, no grafonnet: Debian does not package it.
{
  grafanaDashboards+:: {
    local c = $._config,
    // Every query goes to the dashboard's data source variable.
    local ds = { type: 'prometheus', uid: '${datasource}' },
    // The per-target selector of the dashboard's variables.
    local sel = 'job=~"$job", cluster=~"$cluster", instance=~"$instance"',
    // The cluster row's selector: its recording rules keep cluster and node only.
    local csel = 'cluster=~"$cluster"',
    local topk = std.toString(c.dashboardTopK),
    local grid(h, w, x, y) = { h: h, w: w, x: x, y: y },
    local row(id, title, y) = {
      type: 'row',
      id: id,
      title: title,
      collapsed: false,
      gridPos: grid(1, 24, 0, y),
      panels: [],
    },
    // Query targets: a range query for graphs, an instant one for stats and bar gauges, an
    // instant one in table format for tables.
    local query(refId, expr, legend, range, format) = {
      datasource: ds,
      refId: refId,
      expr: expr,
      legendFormat: legend,
      range: range,
      instant: !range,
      format: format,
    },
    local range(refId, expr, legend='') = query(refId, expr, legend, true, 'time_series'),
    local instant(refId, expr, legend='') = query(refId, expr, legend, false, 'time_series'),
    local table(refId, expr, legend='') = query(refId, expr, legend, false, 'table'),

    'hotkeyd-dashboard.json': {
      title: c.dashboardTitle,
      uid: c.dashboardUid,
      description: "Hot keys per shard and cluster-wide, the advised fix, and hotkeyd's own health. Queries use only hotkeyd's exported metrics, the recording rules of deploy/prometheus/hotkeyd.rules.yml, up and ALERTS.",
      tags: c.dashboardTags,
      schemaVersion: 38,
      version: 1,
      editable: true,
      graphTooltip: 1,
      time: { from: c.dashboardTimeFrom, to: 'now' },
      refresh: c.dashboardRefresh,
      timezone: '',
      links: [
        {
          title: 'Runbooks',
          type: 'link',
          url: c.runbookURLBase + 'runbooks',
          targetBlank: true,
          icon: 'doc',
        },
      ],
      annotations: {
        list: [
          {
            builtIn: 1,
            datasource: { type: 'grafana', uid: '-- Grafana --' },
            enable: true,
            hide: true,
            iconColor: 'rgba(0, 211, 255, 1)',
            name: 'Annotations & Alerts',
            type: 'dashboard',
          },
        ],
      },
      templating: {
        list: [
          {
            name: 'datasource',
            label: 'Data source',
            type: 'datasource',
            query: 'prometheus',
            current: {},
            hide: 0,
            refresh: 1,
            regex: '',
            options: [],
          },
          {
            name: 'job',
            label: 'Job',
            type: 'query',
            datasource: ds,
            query: {
              query: 'label_values(hotkey_build_info, job)',
              refId: 'PrometheusVariableQueryEditor-VariableQuery',
            },
            definition: 'label_values(hotkey_build_info, job)',
            refresh: 2,
            sort: 1,
            multi: false,
            includeAll: false,
            current: {},
            options: [],
            hide: 0,
            regex: '',
          },
          {
            name: 'cluster',
            label: 'Cluster',
            type: 'query',
            datasource: ds,
            query: {
              query: 'label_values(hotkey_build_info{job=~"$job"}, cluster)',
              refId: 'PrometheusVariableQueryEditor-VariableQuery',
            },
            definition: 'label_values(hotkey_build_info{job=~"$job"}, cluster)',
            refresh: 2,
            sort: 1,
            multi: true,
            includeAll: true,
            current: {
              selected: true,
              text: ['All'],
              value: ['$__all'],
            },
            options: [],
            hide: 0,
            regex: '',
            allValue: '.*',
          },
          {
            name: 'instance',
            label: 'Shard (instance)',
            type: 'query',
            datasource: ds,
            query: {
              query: 'label_values(hotkey_build_info{job=~"$job", cluster=~"$cluster"}, instance)',
              refId: 'PrometheusVariableQueryEditor-VariableQuery',
            },
            definition: 'label_values(hotkey_build_info{job=~"$job", cluster=~"$cluster"}, instance)',
            refresh: 2,
            sort: 1,
            multi: true,
            includeAll: true,
            current: {
              selected: true,
              text: ['All'],
              value: ['$__all'],
            },
            options: [],
            hide: 0,
            regex: '',
            allValue: '.*',
          },
          {
            name: 'key',
            label: 'Key',
            type: 'query',
            datasource: ds,
            query: {
              query: 'label_values(hotkey_key_share_ratio{' + sel + '}, key)',
              refId: 'PrometheusVariableQueryEditor-VariableQuery',
            },
            definition: 'label_values(hotkey_key_share_ratio{' + sel + '}, key)',
            refresh: 2,
            sort: 1,
            multi: true,
            includeAll: false,
            current: {},
            options: [],
            hide: 0,
            regex: '',
          },
        ],
      },
      panels: [
        row(1, 'Overview', 0),
        {
          type: 'stat',
          id: 2,
          title: 'Hot keys now',
          description: 'Keys in a hot episode on the selected shards (hotkey_hot_keys).',
          datasource: ds,
          gridPos: grid(4, 4, 0, 1),
          targets: [
            instant('A', 'sum(hotkey_hot_keys{' + sel + '})'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              thresholds: {
                mode: 'absolute',
                steps: [
                  { color: 'green', value: null },
                  { color: 'red', value: 1 },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
            colorMode: 'background',
          },
        },
        {
          type: 'stat',
          id: 3,
          title: 'Shards up',
          description: 'Scraped hotkeyd targets that answer / all targets.',
          datasource: ds,
          gridPos: grid(4, 4, 4, 1),
          targets: [
            instant('A', 'sum(up{' + sel + '})', 'up'),
            instant('B', 'count(up{' + sel + '})', 'targets'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
            colorMode: 'value',
            textMode: 'value_and_name',
          },
        },
        {
          type: 'stat',
          id: 4,
          title: 'Ops/s (selected shards)',
          description: "Sampling-scaled ops/s over the daemon's fixed rate window.",
          datasource: ds,
          gridPos: grid(4, 4, 8, 1),
          targets: [
            instant('A', 'sum(hotkey_ops_per_second{' + sel + '})'),
          ],
          fieldConfig: {
            defaults: { unit: 'ops' },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
            colorMode: 'value',
          },
        },
        {
          type: 'table',
          id: 5,
          title: 'Hotkeyd alerts (firing and pending)',
          description: 'ALERTS from the rules in deploy/prometheus/hotkeyd.rules.yml.',
          datasource: ds,
          gridPos: grid(8, 12, 12, 1),
          targets: [
            table('A', 'ALERTS{alertname=~"Hotkeyd.*", ' + sel + '}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {},
          transformations: [
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true, Value: true, __name__: true },
                indexByName: {
                  alertname: 0,
                  alertstate: 1,
                  severity: 2,
                  cluster: 3,
                  shard: 4,
                  instance: 5,
                  key: 6,
                },
              },
            },
          ],
        },
        {
          type: 'state-timeline',
          id: 6,
          title: 'Alert states over time',
          description: '1 = pending or firing; one lane per alert and target.',
          datasource: ds,
          gridPos: grid(4, 12, 0, 5),
          targets: [
            range('A', 'max by (alertname, instance, key, alertstate) (ALERTS{alertname=~"Hotkeyd.*", ' + sel + '})', '{{alertname}} {{alertstate}} {{instance}} {{key}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {},
        },
        row(7, 'Top keys', 10),
        {
          type: 'table',
          id: 8,
          title: 'Top keys by share, per shard',
          description: "topk(10) of hotkey_key_share_ratio per instance, with the threshold that applies and the estimate's error bound.",
          datasource: ds,
          gridPos: grid(10, 12, 0, 11),
          targets: [
            table('A', 'topk by (instance) (' + topk + ', hotkey_key_share_ratio{' + sel + '})'),
            table('B', 'hotkey_key_share_threshold_ratio{' + sel + '}'),
            table('C', 'hotkey_key_share_error_ratio{' + sel + '}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'percentunit',
              thresholds: {
                mode: 'absolute',
                steps: [
                  { color: 'text', value: null },
                ],
              },
            },
            overrides: [],
          },
          options: {},
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'filterByValue',
              options: {
                filters: [
                  {
                    fieldName: 'Value #A',
                    config: {
                      id: 'isNull',
                      options: {},
                    },
                  },
                ],
                type: 'exclude',
                match: 'any',
              },
            },
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true, job: true, __name__: true },
                renameByName: {
                  'Value #A': 'share',
                  'Value #B': 'threshold',
                  'Value #C': '± error',
                },
              },
            },
            {
              id: 'sortBy',
              options: {
                sort: [
                  { field: 'share', desc: true },
                ],
              },
            },
          ],
        },
        {
          type: 'bargauge',
          id: 9,
          title: "Top keys, cluster-wide (busiest shard's share)",
          description: 'Recording rule cluster_key:hotkey_key_share_ratio:max.',
          datasource: ds,
          gridPos: grid(10, 12, 12, 11),
          targets: [
            instant('A', 'topk(' + topk + ', cluster_key:hotkey_key_share_ratio:max{cluster=~"$cluster"})', '{{cluster}} {{key}}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'percentunit',
              min: 0,
              max: 1,
              thresholds: {
                mode: 'absolute',
                steps: [
                  { color: 'green', value: null },
                  { color: 'orange', value: 0.1 },
                  { color: 'red', value: 0.2 },
                ],
              },
            },
            overrides: [],
          },
          options: {
            orientation: 'horizontal',
            displayMode: 'gradient',
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
            min: 0,
            max: 1,
          },
        },
        {
          type: 'table',
          id: 10,
          title: 'Hot keys: advised strategy',
          description: 'Hot keys (hotkey_key_hot == 1) with the fix the daemon advises, hotkey_key_advice_info (cache/replicate for hot reads, split for hot writes, split_cache for both, isolate when nothing fits).',
          datasource: ds,
          gridPos: grid(8, 12, 0, 21),
          targets: [
            table('A', 'hotkey_key_advice_info{' + sel + '} and on (job, instance, key) (hotkey_key_hot{' + sel + '} == 1)'),
            table('B', 'hotkey_key_write_ratio{' + sel + '} and on (job, instance, key) (hotkey_key_hot{' + sel + '} == 1)'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [
              {
                matcher: { id: 'byName', options: 'write ratio' },
                properties: [
                  { id: 'unit', value: 'percentunit' },
                ],
              },
            ],
          },
          options: {},
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'filterByValue',
              options: {
                filters: [
                  {
                    fieldName: 'Value #A',
                    config: {
                      id: 'isNull',
                      options: {},
                    },
                  },
                ],
                type: 'exclude',
                match: 'any',
              },
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  job: true,
                  __name__: true,
                  'Value #A': true,
                },
                renameByName: { 'Value #B': 'write ratio' },
              },
            },
          ],
        },
        {
          type: 'bargauge',
          id: 11,
          title: 'Hot keys: projected busiest-shard load by strategy',
          description: "hotkey_key_projected_load_ratio: the busiest shard's load / capacity if each strategy were applied; above 100% the shard is overloaded.",
          datasource: ds,
          gridPos: grid(8, 12, 12, 21),
          targets: [
            instant('A', 'hotkey_key_projected_load_ratio{' + sel + '} and on (job, instance, key) (hotkey_key_hot{' + sel + '} == 1)', '{{key}} → {{strategy}}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'percentunit',
              thresholds: {
                mode: 'absolute',
                steps: [
                  { color: 'green', value: null },
                  { color: 'orange', value: 0.8 },
                  { color: 'red', value: 1 },
                ],
              },
            },
            overrides: [],
          },
          options: {
            orientation: 'horizontal',
            displayMode: 'gradient',
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
          },
        },
        row(12, 'Key detail: $key', 29),
        {
          type: 'timeseries',
          id: 13,
          title: 'Share of $key',
          description: "The key's share of its shard's traffic, with its threshold (dashed) and the estimate's upper error bound.",
          datasource: ds,
          gridPos: grid(8, 12, 0, 30),
          targets: [
            range('A', 'hotkey_key_share_ratio{' + sel + ', key=~"$key"}', '{{instance}} {{key}}'),
            range('B', 'hotkey_key_share_threshold_ratio{' + sel + ', key=~"$key"}', 'threshold {{instance}} {{key}}'),
            range('C', 'hotkey_key_share_ratio{' + sel + ', key=~"$key"} + hotkey_key_share_error_ratio{' + sel + ', key=~"$key"}', 'upper bound {{instance}} {{key}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [
              {
                matcher: { id: 'byRegexp', options: 'threshold.*' },
                properties: [
                  {
                    id: 'custom.lineStyle',
                    value: {
                      fill: 'dash',
                      dash: [10, 10],
                    },
                  },
                ],
              },
              {
                matcher: { id: 'byRegexp', options: 'upper bound.*' },
                properties: [
                  {
                    id: 'custom.lineStyle',
                    value: {
                      fill: 'dot',
                      dash: [0, 10],
                    },
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 14,
          title: 'Ops/s of $key by op',
          description: 'hotkey_key_ops_per_second, sampling-scaled.',
          datasource: ds,
          gridPos: grid(8, 12, 12, 30),
          targets: [
            range('A', 'hotkey_key_ops_per_second{' + sel + ', key=~"$key"}', '{{instance}} {{key}} {{op}}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'ops',
              custom: {
                stacking: { mode: 'normal', group: 'A' },
                fillOpacity: 20,
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 15,
          title: 'Projected busiest-shard load of $key by strategy',
          description: 'hotkey_key_projected_load_ratio per strategy; the advised one is the cheapest that stays under the target.',
          datasource: ds,
          gridPos: grid(8, 12, 0, 38),
          targets: [
            range('A', 'hotkey_key_projected_load_ratio{' + sel + ', key=~"$key"}', '{{key}} {{strategy}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'state-timeline',
          id: 16,
          title: 'Hot episodes of $key (and advice)',
          description: 'hotkey_key_hot: 1 while the key is hot; the lane name carries the advised strategy.',
          datasource: ds,
          gridPos: grid(8, 12, 12, 38),
          targets: [
            range('A', 'hotkey_key_hot{' + sel + ', key=~"$key"}', '{{instance}} {{key}} → {{strategy}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {},
        },
        row(17, 'Read/write mix of hot keys', 46),
        {
          type: 'timeseries',
          id: 18,
          title: 'Write ratio of hot keys',
          description: 'hotkey_key_write_ratio of keys in a hot episode: near 0 = read-hot (cache, replicate), near 1 = write-hot (split).',
          datasource: ds,
          gridPos: grid(8, 8, 0, 47),
          targets: [
            range('A', 'hotkey_key_write_ratio{' + sel + '} and on (job, instance, key) (hotkey_key_hot{' + sel + '} == 1)', '{{instance}} {{key}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit', min: 0, max: 1 },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 19,
          title: 'Ops/s of hot keys by op',
          description: 'hotkey_key_ops_per_second of keys in a hot episode, summed over shards.',
          datasource: ds,
          gridPos: grid(8, 8, 8, 47),
          targets: [
            range('A', 'sum by (key, op) (hotkey_key_ops_per_second{' + sel + '} and on (job, instance, key) (hotkey_key_hot{' + sel + '} == 1))', '{{key}} {{op}}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'ops',
              custom: {
                stacking: { mode: 'normal', group: 'A' },
                fillOpacity: 20,
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 20,
          title: 'Shard ops/s by op',
          description: "hotkey_ops_per_second: each shard's total.",
          datasource: ds,
          gridPos: grid(8, 8, 16, 47),
          targets: [
            range('A', 'sum by (instance, op) (hotkey_ops_per_second{' + sel + '})', '{{instance}} {{op}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'ops' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 21,
          title: 'Cluster-wide ops/s of the top keys',
          description: 'Recording rule cluster_key:hotkey_key_ops_per_second:sum.',
          datasource: ds,
          gridPos: grid(8, 12, 0, 55),
          targets: [
            range('A', 'topk(' + topk + ', cluster_key:hotkey_key_ops_per_second:sum{cluster=~"$cluster"})', '{{cluster}} {{key}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'ops' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'state-timeline',
          id: 22,
          title: 'Hot anywhere in the cluster',
          description: 'Recording rule cluster_key:hotkey_key_hot:max: 1 when the key is hot on any shard.',
          datasource: ds,
          gridPos: grid(8, 12, 12, 55),
          targets: [
            range('A', 'cluster_key:hotkey_key_hot:max{cluster=~"$cluster"} == 1', '{{cluster}} {{key}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {},
        },
        row(23, 'Ingest', 63),
        {
          type: 'timeseries',
          id: 24,
          title: 'Datagrams/s',
          description: 'Received and rejected (by reason) datagrams.',
          datasource: ds,
          gridPos: grid(8, 8, 0, 64),
          targets: [
            range('A', 'sum by (instance) (rate(hotkey_datagrams_received_total{' + sel + '}[$__rate_interval]))', 'received {{instance}}'),
            range('B', 'sum by (instance, reason) (rate(hotkey_datagrams_rejected_total{' + sel + '}[$__rate_interval]))', 'rejected {{instance}} {{reason}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'pps' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 25,
          title: 'Events/s',
          description: 'Received and rejected (by reason) event lines.',
          datasource: ds,
          gridPos: grid(8, 8, 8, 64),
          targets: [
            range('A', 'sum by (instance) (rate(hotkey_events_received_total{' + sel + '}[$__rate_interval]))', 'received {{instance}}'),
            range('B', 'sum by (instance, reason) (rate(hotkey_events_rejected_total{' + sel + '}[$__rate_interval]))', 'rejected {{instance}} {{reason}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 26,
          title: 'Rejected fraction and kernel drops',
          description: 'Share of events rejected (left) and datagrams dropped by the kernel per second (right); see the HotkeydDroppingDatagrams and HotkeydKernelDrops runbooks.',
          datasource: ds,
          gridPos: grid(8, 8, 16, 64),
          targets: [
            range('A', 'sum by (instance) (rate(hotkey_events_rejected_total{' + sel + '}[$__rate_interval])) / sum by (instance) (rate(hotkey_events_received_total{' + sel + '}[$__rate_interval]))', 'rejected fraction {{instance}}'),
            range('B', 'rate(hotkey_udp_kernel_drops_total{' + sel + '}[$__rate_interval])', 'kernel drops/s {{instance}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [
              {
                matcher: { id: 'byRegexp', options: 'kernel drops.*' },
                properties: [
                  { id: 'unit', value: 'pps' },
                  { id: 'custom.axisPlacement', value: 'right' },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        row(27, 'hotkeyd itself', 72),
        {
          type: 'timeseries',
          id: 28,
          title: 'Tracked keys',
          description: 'hotkey_tracked_keys: candidates in the top-K structures (bounded by --track.candidates).',
          datasource: ds,
          gridPos: grid(8, 6, 0, 73),
          targets: [
            range('A', 'hotkey_tracked_keys{' + sel + '}', '{{instance}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 29,
          title: 'Memory',
          description: "Resident and virtual memory, and the sketch's fixed size.",
          datasource: ds,
          gridPos: grid(8, 6, 6, 73),
          targets: [
            range('A', 'process_resident_memory_bytes{' + sel + '}', 'RSS {{instance}}'),
            range('B', 'hotkey_sketch_bytes{' + sel + '}', 'sketch {{instance}}'),
            range('C', 'process_virtual_memory_bytes{' + sel + '}', 'virtual {{instance}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'bytes' },
            overrides: [
              {
                matcher: { id: 'byRegexp', options: 'virtual.*' },
                properties: [
                  {
                    id: 'custom.hideFrom',
                    value: { legend: false, tooltip: false, viz: true },
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 30,
          title: 'CPU',
          description: 'CPU cores used by hotkeyd.',
          datasource: ds,
          gridPos: grid(8, 6, 12, 73),
          targets: [
            range('A', 'rate(process_cpu_seconds_total{' + sel + '}[$__rate_interval])', '{{instance}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'timeseries',
          id: 31,
          title: 'File descriptors',
          description: 'Open / maximum file descriptors.',
          datasource: ds,
          gridPos: grid(8, 6, 18, 73),
          targets: [
            range('A', 'process_open_fds{' + sel + '} / process_max_fds{' + sel + '}', '{{instance}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'table',
          id: 32,
          title: 'Build, uptime and config',
          description: 'hotkey_build_info, time since start, and the last configuration reload.',
          datasource: ds,
          gridPos: grid(6, 24, 0, 81),
          targets: [
            table('A', 'hotkey_build_info{' + sel + '}'),
            table('B', 'time() - process_start_time_seconds{' + sel + '}'),
            table('C', 'hotkey_config_last_reload_successful{' + sel + '}'),
            table('D', 'time() - hotkey_config_last_reload_success_timestamp_seconds{' + sel + '}'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [
              {
                matcher: { id: 'byName', options: 'uptime' },
                properties: [
                  { id: 'unit', value: 's' },
                ],
              },
              {
                matcher: { id: 'byName', options: 'since last good reload' },
                properties: [
                  { id: 'unit', value: 's' },
                ],
              },
            ],
          },
          options: {},
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true, __name__: true, 'Value #A': true },
                renameByName: {
                  'Value #B': 'uptime',
                  'Value #C': 'last reload ok',
                  'Value #D': 'since last good reload',
                },
              },
            },
          ],
        },
        // The cluster-wide view of a Redis Cluster with one hotkeyd per node, from the
        // recording rules of group hotkeyd.cluster (topk per cluster, each with its node).
        row(33, 'Cluster: hottest nodes, slots, tags, keys', 87),
        {
          type: 'table',
          id: 34,
          title: 'Hottest nodes',
          description: 'Per Redis Cluster node (target label node): the ops/s hotkeyd counts, CPU busy and load over capacity as the node reports them, the slots it serves (hotkey_cluster_node_slots) and its Redis Cluster node id (hotkey_cluster_node_info). Recording rules cluster_node:*:topk.',
          datasource: ds,
          gridPos: grid(9, 12, 0, 88),
          targets: [
            table('A', 'cluster_node:hotkey_ops_per_second:topk{' + csel + '}'),
            table('B', 'cluster_node:hotkey_shard_cpu_busy_ratio:topk{' + csel + '}'),
            table('C', 'cluster_node:hotkey_shard_load_ratio:topk{' + csel + '}'),
            table('D', 'max by (cluster, node) (hotkey_cluster_node_slots{' + csel + '})'),
            table('E', 'max by (cluster, node, node_id) (hotkey_cluster_node_info{' + csel + '})'),
          ],
          fieldConfig: {
            defaults: { unit: 'short' },
            overrides: [
              {
                matcher: { id: 'byName', options: 'ops/s' },
                properties: [{ id: 'unit', value: 'ops' }],
              },
              {
                matcher: { id: 'byName', options: 'CPU busy' },
                properties: [{ id: 'unit', value: 'percentunit' }],
              },
              {
                matcher: { id: 'byName', options: 'load' },
                properties: [{ id: 'unit', value: 'percentunit' }],
              },
            ],
          },
          options: {},
          transformations: [
            { id: 'merge', options: {} },
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true, 'Value #E': true },
                renameByName: {
                  'Value #A': 'ops/s',
                  'Value #B': 'CPU busy',
                  'Value #C': 'load',
                  'Value #D': 'slots',
                },
              },
            },
            {
              id: 'sortBy',
              options: { sort: [{ field: 'ops/s', desc: true }] },
            },
          ],
        },
        {
          type: 'timeseries',
          id: 35,
          title: 'Ops/s of the hottest nodes',
          description: 'Recording rule cluster_node:hotkey_ops_per_second:topk.',
          datasource: ds,
          gridPos: grid(9, 12, 12, 88),
          targets: [
            range('A', 'cluster_node:hotkey_ops_per_second:topk{' + csel + '}', '{{cluster}} {{node}}'),
          ],
          fieldConfig: {
            defaults: { unit: 'ops' },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
        {
          type: 'table',
          id: 36,
          title: 'Hottest slots',
          description: "Each slot's share of its node's ops and its ops/s (cluster_node_slot:*:topk), the share of its busiest key (hotkey_slot_top_key_share_ratio), and the advice for hot slots: key (one key carries it: the key's own fix), tag (one hash tag carries it: re-key the tag; moving the slot would only move the hot spot) or move (the node's rebalance plan moves it, see the runbook).",
          datasource: ds,
          gridPos: grid(9, 12, 0, 97),
          targets: [
            table('A', 'topk(' + topk + ', cluster_node_slot:hotkey_slot_share_ratio:topk{' + csel + '})'),
            table('B', 'cluster_node_slot:hotkey_slot_ops_per_second:topk{' + csel + '}'),
            table('C', 'max by (cluster, node, slot) (hotkey_slot_top_key_share_ratio{' + csel + '})'),
            table('D', 'cluster_node_slot:hotkey_slot_advice_info:max{' + csel + '}'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [
              {
                matcher: { id: 'byName', options: 'ops/s' },
                properties: [{ id: 'unit', value: 'ops' }],
              },
            ],
          },
          options: {},
          transformations: [
            { id: 'merge', options: {} },
            {
              id: 'filterByValue',
              options: {
                filters: [{ fieldName: 'Value #A', config: { id: 'isNull', options: {} } }],
                type: 'exclude',
                match: 'any',
              },
            },
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true, 'Value #D': true },
                renameByName: {
                  'Value #A': 'share of node',
                  'Value #B': 'ops/s',
                  'Value #C': 'busiest key share',
                },
              },
            },
            {
              id: 'sortBy',
              options: { sort: [{ field: 'share of node', desc: true }] },
            },
          ],
        },
        {
          type: 'table',
          id: 37,
          title: 'Hottest hash tags',
          description: 'Each hash tag ({...} in the keys) with its slot: its share of its node, its ops/s (cluster_node_tag:*:topk), and whether it is hot (hotkey_tag_hot). A hot tag is the cause itself: its keys share one slot because of the tag, and need not.',
          datasource: ds,
          gridPos: grid(9, 12, 12, 97),
          targets: [
            table('A', 'topk(' + topk + ', cluster_node_tag:hotkey_tag_share_ratio:topk{' + csel + '})'),
            table('B', 'cluster_node_tag:hotkey_tag_ops_per_second:topk{' + csel + '}'),
            table('C', 'max by (cluster, node, tag, slot) (hotkey_tag_hot{' + csel + '})'),
          ],
          fieldConfig: {
            defaults: { unit: 'percentunit' },
            overrides: [
              {
                matcher: { id: 'byName', options: 'ops/s' },
                properties: [{ id: 'unit', value: 'ops' }],
              },
              {
                matcher: { id: 'byName', options: 'hot' },
                properties: [{ id: 'unit', value: 'short' }],
              },
            ],
          },
          options: {},
          transformations: [
            { id: 'merge', options: {} },
            {
              id: 'filterByValue',
              options: {
                filters: [{ fieldName: 'Value #A', config: { id: 'isNull', options: {} } }],
                type: 'exclude',
                match: 'any',
              },
            },
            {
              id: 'organize',
              options: {
                excludeByName: { Time: true },
                renameByName: {
                  'Value #A': 'share of node',
                  'Value #B': 'ops/s',
                  'Value #C': 'hot',
                },
              },
            },
            {
              id: 'sortBy',
              options: { sort: [{ field: 'share of node', desc: true }] },
            },
          ],
        },
        {
          type: 'bargauge',
          id: 38,
          title: 'Hottest keys, with their node',
          description: 'Recording rule cluster_node_key:hotkey_key_ops_per_second:topk: the ops/s of the busiest keys of the cluster and the node that serves each.',
          datasource: ds,
          gridPos: grid(9, 12, 0, 106),
          targets: [
            instant('A', 'topk(' + topk + ', cluster_node_key:hotkey_key_ops_per_second:topk{' + csel + '})', '{{cluster}} {{node}} {{key}}'),
          ],
          fieldConfig: {
            defaults: {
              unit: 'ops',
              min: 0,
              thresholds: {
                mode: 'absolute',
                steps: [
                  { color: 'green', value: null },
                ],
              },
            },
            overrides: [],
          },
          options: {
            orientation: 'horizontal',
            displayMode: 'gradient',
            reduceOptions: {
              calcs: ['lastNotNull'],
            },
            min: 0,
          },
        },
        {
          type: 'timeseries',
          id: 39,
          title: 'Hot slots and hot tags per cluster',
          description: 'Recording rules cluster:hotkey_hot_slots:sum and cluster:hotkey_hot_tags:sum.',
          datasource: ds,
          gridPos: grid(9, 12, 12, 106),
          targets: [
            range('A', 'cluster:hotkey_hot_slots:sum{' + csel + '}', '{{cluster}} hot slots'),
            range('B', 'cluster:hotkey_hot_tags:sum{' + csel + '}', '{{cluster}} hot tags'),
          ],
          fieldConfig: {
            defaults: { unit: 'short', min: 0, decimals: 0 },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              calcs: ['lastNotNull', 'max'],
              showLegend: true,
            },
            tooltip: { mode: 'multi', sort: 'desc' },
          },
        },
      ],
    },
  },
}
