// hotkeyd's alerting rules: hot keys on a shard, and the health of the hotkeyd sidecar.
//
// Style: monitoring-mixins (CamelCase alert names with the `Hotkeyd` prefix, `severity`
// label, `summary`/`description`/`runbook_url` annotations). Tests:
// deploy/prometheus/hotkeyd.rules.test.yml (`promtool test rules` on the generated file);
// runbooks: deploy/README.md#runbooks.
//
// Label conventions. Every hotkeyd series carries the scrape's `job` and `instance`, and,
// when the scrape config sets them, the `cluster` and `shard` target labels (the daemon
// itself never invents them; see deploy/prometheus/scrape.yml). The per-key series of one
// target share the same label set ({key} plus the target labels), so share and threshold
// match one-to-one without `on(...)`: a one-to-one `on(...)` would keep ONLY the listed
// labels and drop `cluster`/`shard` from the alert.
//
// Hot-key severities. "Hot" is the daemon's verdict (hotkey_key_hot, which applies the key's
// threshold, alert.min_dwell, alert.hysteresis and the alert.min_ops idle guard); the
// rules never re-derive it from the share. A hot key is a warning (a ticket). It pages
// (critical) only when the daemon's model says the shard is at risk without a fix: the
// projected busiest-shard load with strategy="none" is over _config.pageLoadRatio. While
// both fire, the Alertmanager inhibit rule in deploy/alertmanager/alertmanager.yml mutes the
// warning. keep_firing_for holds a firing alert through a short gap (a failed scrape marks
// the series stale; the daemon ends an episode and starts another), so one dip neither
// resolves nor re-notifies.
//
// Why the advised strategy is an annotation and not a label: if it were joined into the
// alert's expression (group_left(strategy)), the strategy would become part of the alert's
// identity, so the daemon changing its advice would end one alert and start another (a new
// `for:` timer, a new notification). hotkey_key_hot carries no strategy, and the
// annotation looks the fix up in hotkey_key_advice_info with a query at notification time,
// saying "not advised yet" when the daemon has no advice. The share and the projected
// loads the alerts read are over the daemon's rate window, as its page and API show them,
// and the daemon holds a key's advice steady (hysteresis on its projected loads,
// alert.advice_margin). A key is advised, and has projected loads, only while it is hot and
// the shard's headroom is measured or configured: with an unknown headroom no series exists
// for HotkeydHotKeyCritical to read, so it never pages on a default.
local text = import '../lib/text.libsonnet';

{
  prometheusAlerts+:: {
    local c = $._config,
    local runbook(alert) = c.runbookURLBase + std.asciiLower(alert),
    // Go-template lookups for the descriptions: one series of this alert's target and key.
    local lookup(metric, extra='') =
      '{{ with printf "' + metric + '{job=%q,instance=%q,key=%q' + extra +
      '}" $labels.job $labels.instance $labels.key | query }}' +
      '{{ . | first | value | humanizePercentage }}{{ else }}(unknown){{ end }}',
    local advice =
      '{{ with printf "hotkey_key_advice_info{job=%q,instance=%q,key=%q} == 1" $labels.job ' +
      '$labels.instance $labels.key | query }}{{ . | first | label "strategy" }}' +
      '{{ else }}not advised yet{{ end }}',

    // The node the daemon advises to move slots off (see HotkeydHotSlotMove): the value is
    // its commands/s over its peers' mean.
    local moveNode = |||
      hotkey_cluster_peers_ratio
      and on (job, instance)
      hotkey_slot_move_advised == 1
    |||,
    // The hot slots the daemon advises to re-key (see HotkeydHotSlotTag).
    local hotTagSlot = |||
      hotkey_slot_share_ratio
      and ignoring (advice)
      (hotkey_slot_advice_info{advice="tag"} == 1)
      and
      hotkey_slot_hot == 1
    |||,
    // Lookups for the slot alerts' descriptions: one series of this alert's target.
    local targetLookup(query, args='$labels.job $labels.instance') =
      '{{ with printf "' + query + '" ' + args + ' | query }}' +
      '{{ . | first | value | humanizePercentage }}{{ else }}(unknown){{ end }}',
    local targetNumber(query, args='$labels.job $labels.instance') =
      '{{ with printf "' + query + '" ' + args + ' | query }}' +
      '{{ . | first | value | humanize }}{{ else }}(unknown){{ end }}',
    local moveText = {
      node: text.node,
      load: targetLookup(
        'hotkey_shard_commands_per_second{job=%q,instance=%q} / ignoring (input, origin) ' +
        'hotkey_model_input{job=%q,instance=%q,input=\\"capacity_ops_per_second\\"}',
        '$labels.job $labels.instance $labels.job $labels.instance'
      ),
      ops: targetNumber('hotkey_shard_commands_per_second{job=%q,instance=%q}'),
      peers: targetNumber('hotkey_cluster_peers_commands_per_second{job=%q,instance=%q}'),
      slots: targetNumber('hotkey_slot_move_slots{job=%q,instance=%q}'),
      from: targetNumber('hotkey_slot_move_projected_commands_per_second{job=%q,instance=%q,role=\\"from\\"}'),
    },
    local tagText = {
      node: text.node,
      toptag:
        '{{ with printf "hotkey_slot_top_tag_share_ratio{job=%q,instance=%q,slot=%q}" $labels.job ' +
        '$labels.instance $labels.slot | query }}{{ . | first | value | humanizePercentage }}' +
        '{{ else }}(unknown){{ end }}',
      split:
        '{{ with printf "hotkey_slot_tag_split{job=%q,instance=%q,slot=%q}" $labels.job ' +
        '$labels.instance $labels.slot | query }}{{ . | first | value | humanize }}' +
        '{{ else }}(unknown){{ end }}',
    },

    groups+: [
      {
        name: 'hotkeyd.alerts',
        rules: [
          {
            // The daemon holds the key hot. The value is the key's share over the rate
            // window, which may sit a little under the threshold while hysteresis keeps it
            // hot.
            alert: 'HotkeydHotKey',
            expr: |||
              hotkey_key_share_ratio
              and
              hotkey_key_hot == 1
            |||,
            'for': c.hotKeyFor,
            keep_firing_for: c.hotKeyKeepFiringFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A key is hot on a shard; the shard is not at risk (yet).',
              description: text.fold(|||
                Key "{{ $labels.key }}" is hot on
                %(target)s:
                it takes {{ $value | humanizePercentage }} of the shard's traffic, against a threshold of
                %(threshold)s.
                Projected load of the shard with no fix:
                %(projected)s
                of capacity.
                Advised strategy:
                %(advice)s.
              ||| % {
                target: text.target,
                threshold: lookup('hotkey_key_share_threshold_ratio'),
                projected: lookup('hotkey_key_projected_load_ratio', ',strategy=\\"none\\"'),
                advice: advice,
              }),
              runbook_url: runbook('HotkeydHotKey'),
            },
          },
          {
            // The daemon holds the key hot AND its model projects the key's shard, with no
            // fix, over the page level, averaged over projectedLoadWindow. The share alone
            // never pages: a 24% key on a shard at 15% of capacity is a ticket. There is no
            // ops/s idle guard here: a shard projected at 80% of its capacity is not idle,
            // and the daemon's alert.min_ops already keeps quiet shards' keys cold.
            alert: 'HotkeydHotKeyCritical',
            expr: |||
              max without (strategy) (
                avg_over_time(hotkey_key_projected_load_ratio{strategy="none"}[%(window)s])
              ) > %(page)s
              and
              hotkey_key_hot == 1
            ||| % { window: c.projectedLoadWindow, page: '%g' % c.pageLoadRatio },
            'for': c.hotKeyFor,
            keep_firing_for: c.hotKeyKeepFiringFor,
            labels: { severity: 'critical' },
            annotations: {
              summary: 'A hot key puts its shard over its load target.',
              description: text.fold(|||
                Key "{{ $labels.key }}" is hot on
                %(target)s,
                and with no fix the shard's projected load is {{ $value | humanizePercentage }} of its
                capacity (%(window)s average; pages above %(page)s%%). The key takes
                %(share)s
                of the shard's traffic.
                Advised strategy:
                %(advice)s.
              ||| % {
                target: text.target,
                window: c.projectedLoadWindow,
                page: text.percent(c.pageLoadRatio),
                share: lookup('hotkey_key_share_ratio'),
                advice: advice,
              }),
              runbook_url: runbook('HotkeydHotKeyCritical'),
            },
          },
          {
            // The daemon advises moving slots off this node (hotkey_slot_move_advised): it is
            // the busiest primary of its cluster, over its load target or clearly over its
            // peers (hotkey_cluster_peers_ratio), whether through one hot slot or many warm
            // ones, and its plan brings it under its goal. Slots hot through one key or one
            // hash tag are never in a plan (HotkeydHotSlotTag, and the key's own alerts). The
            // alert resolves once no move lowers the busiest node: after the plan ran, or when
            // the load evens out. The value is the node's commands/s over its peers' mean. A
            // ticket: the critical twin below pages when the node itself is at risk.
            alert: 'HotkeydHotSlotMove',
            expr: moveNode,
            'for': c.hotKeyFor,
            keep_firing_for: c.hotKeyKeepFiringFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A Redis Cluster node serves more than it should; move the planned slots off it.',
              description: text.fold(|||
                %(node)s
                is the busiest node of its Redis Cluster: %(ops)s commands/s, {{ $value | humanize }}x
                its peers' mean of %(peers)s; load %(load)s of capacity. The advised plan moves
                %(slots)s slots off it to the least loaded primaries, bringing it to %(from)s
                commands/s. The plan, each node's projection and the redis-cli script: GET
                /api/v1/slots on {{ $labels.instance }} (`move`).
              ||| % moveText),
              runbook_url: c.runbookURLBase + 'fix-move-slots',
            },
          },
          {
            // The same advice, on a node whose load (the shard's own commands/s over the
            // model's capacity), averaged over projectedLoadWindow, is over the page level:
            // the node is at risk. Alertmanager should mute HotkeydHotSlotMove while this
            // fires, as it does HotkeydHotKey for HotkeydHotKeyCritical.
            alert: 'HotkeydHotSlotMoveCritical',
            expr: |||
              (
                %(node)s
              )
              and on (job, instance)
              (
                avg_over_time(hotkey_shard_commands_per_second[%(window)s])
                / ignoring (input, origin)
                (hotkey_model_input{input="capacity_ops_per_second"} > 0)
                > %(page)s
              )
            ||| % {
              node: std.strReplace(std.rstripChars(moveNode, '\n'), '\n', '\n  '),
              window: c.projectedLoadWindow,
              page: '%g' % c.pageLoadRatio,
            },
            'for': c.hotKeyFor,
            keep_firing_for: c.hotKeyKeepFiringFor,
            labels: { severity: 'critical' },
            annotations: {
              summary: 'A Redis Cluster node over its load target; move the planned slots off it.',
              description: text.fold(|||
                %(node)s
                is the busiest node of its Redis Cluster and at risk: its load is %(load)s of
                capacity (pages while its %(window)s average is above %(page)s%%), %(ops)s
                commands/s, {{ $value | humanize }}x its peers' mean of %(peers)s. The advised
                plan moves %(slots)s slots off it, bringing it to %(from)s commands/s. The plan,
                each node's projection and the redis-cli script: GET /api/v1/slots on
                {{ $labels.instance }} (`move`).
              ||| % moveText {
                window: c.projectedLoadWindow,
                page: text.percent(c.pageLoadRatio),
              }),
              runbook_url: c.runbookURLBase + 'fix-move-slots',
            },
          },
          {
            // A hot slot whose traffic is one hash tag's (hotkey_slot_advice_info{advice="tag"}):
            // the keys share the slot because of the tag, so moving the slot only moves the hot
            // spot to another node; re-keying the tag (its keys given tags of their own) spreads
            // them over the cluster. The value is the slot's share of the node's ops. A ticket.
            alert: 'HotkeydHotSlotTag',
            expr: hotTagSlot,
            'for': c.hotKeyFor,
            keep_firing_for: c.hotKeyKeepFiringFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A Redis Cluster slot is hot through one hash tag; re-key the tag, do not move the slot.',
              description: text.fold(|||
                Slot {{ $labels.slot }} is hot on
                %(node)s:
                it takes {{ $value | humanizePercentage }} of the node's traffic, and its busiest
                hash tag carries %(toptag)s of the slot. Moving the slot only moves the hot spot:
                give the tag's keys tags of their own, spread over at least %(split)s tags. The
                tag: GET /api/v1/slots on {{ $labels.instance }} (`slots[].top_tag`).
              ||| % tagText),
              runbook_url: c.runbookURLBase + 'fix-re-key-a-tag',
            },
          },
          {
            // The target received events before (the timestamp is 0, or absent, until the
            // first event after a start) and none for feedSilentSeconds: the clients stopped
            // sending, or their datagrams no longer reach it. A target that never had an
            // event since it started does not fire (it may be a spare or a shard without
            // clients yet); a scrape failure is HotkeydDown's. Warning: hot keys on that
            // shard go undetected, the shard itself is not affected. The value is the
            // seconds since the last event.
            alert: 'HotkeydFeedSilent',
            expr: |||
              (time() - hotkey_last_event_timestamp_seconds > %(silent)d)
              and
              hotkey_last_event_timestamp_seconds > 0
            ||| % { silent: c.feedSilentSeconds },
            labels: { severity: 'warning' },
            annotations: {
              summary: 'hotkeyd has received no events for %d minutes.' % (c.feedSilentSeconds / 60),
              description: text.fold(|||
                hotkeyd on
                %(target)s
                received its last event {{ $value | humanizeDuration }} ago, after having had traffic;
                hot keys on that shard are not being detected.
              ||| % { target: text.target }),
              runbook_url: runbook('HotkeydFeedSilent'),
            },
          },
          {
            // Warning, not critical: hotkeyd is off the data path (clients send
            // fire-and-forget UDP), so its absence loses hot-key visibility, not service.
            // It is the alert that says the other Hotkeyd* alerts cannot fire; route it to
            // a ticket or the day shift.
            alert: 'HotkeydDown',
            expr: 'up{%s} == 0' % c.hotkeydSelector,
            'for': c.downFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'hotkeyd cannot be scraped.',
              description: text.fold(|||
                Prometheus has failed to scrape hotkeyd on
                %(target)s
                for more than %(for)s; hot keys on that shard are not being detected.
              ||| % {
                target: text.target,
                'for': if c.downFor == '1m' then 'a minute' else c.downFor,
              }),
              runbook_url: runbook('HotkeydDown'),
            },
          },
          {
            // Rejected events (bad lines) or rejected datagrams (bad header) above
            // rejectedRatio of what arrived. `sum without (reason)` keeps every target
            // label for the description. A shard receiving nothing yields 0/0 = NaN, which
            // compares false: no alert.
            alert: 'HotkeydDroppingDatagrams',
            expr: |||
              (
                sum without (reason) (rate(hotkey_events_rejected_total[%(w)s]))
                /
                rate(hotkey_events_received_total[%(w)s])
              ) > %(r)s
              or
              (
                sum without (reason) (rate(hotkey_datagrams_rejected_total[%(w)s]))
                /
                rate(hotkey_datagrams_received_total[%(w)s])
              ) > %(r)s
            ||| % { w: c.rateWindow, r: '%g' % c.rejectedRatio },
            'for': c.droppingFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'hotkeyd rejects a large fraction of what clients send.',
              description: text.fold(|||
                {{ $value | humanizePercentage }} of the events or datagrams sent to
                %(target)s
                are rejected as malformed; hot-key shares there undercount those clients.
                See hotkey_events_rejected_total and hotkey_datagrams_rejected_total by reason.
              ||| % { target: text.target }),
              runbook_url: runbook('HotkeydDroppingDatagrams'),
            },
          },
          {
            // Any sustained kernel drop: the socket buffer overflows because hotkeyd does
            // not read fast enough. Shares stay roughly right if drops are uniform, but
            // bursts of one key are exactly what gets dropped, so the estimates are no
            // longer trustworthy.
            alert: 'HotkeydKernelDrops',
            expr: 'rate(hotkey_udp_kernel_drops_total[%s]) > 0' % c.rateWindow,
            'for': c.kernelDropsFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'The kernel drops datagrams before hotkeyd reads them.',
              description: text.fold(|||
                The kernel drops {{ $value | humanize }} datagrams/s addressed to hotkeyd on
                %(target)s
                (UDP receive buffer overflow); hot-key estimates there are incomplete.
              ||| % { target: text.target }),
              runbook_url: runbook('HotkeydKernelDrops'),
            },
          },
          {
            // hotkeyd keeps running with the previous config, so nothing breaks now; but the
            // next restart will fail to start with the file on disk.
            alert: 'HotkeydConfigReloadFailed',
            expr: 'hotkey_config_last_reload_successful == 0',
            'for': c.reloadFailedFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'hotkeyd could not reload its configuration.',
              description: text.fold(|||
                The last configuration reload of hotkeyd on
                %(target)s
                failed; it keeps running with the previous configuration, and will not start
                with the current file after a restart.
              ||| % { target: text.target }),
              runbook_url: runbook('HotkeydConfigReloadFailed'),
            },
          },
        ],
      },
    ],
  },
}
