#!/usr/bin/env python3
"""Tests for check_dashboard_metrics.py: the tokenizer, and the shipped dashboard and rules
against the hand-written exposition in testdata/metrics.txt (every name in
/work/notes/common.md's list). Run: python3 tests/deploy/check_dashboard_metrics_test.py
"""

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import check_dashboard_metrics as cdm  # noqa: E402

DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "hotkeyd-dashboard.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "hotkeyd.rules.yml")
METRICS = os.path.join(HERE, "testdata", "metrics.txt")


def run(*args):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = cdm.main(list(args))
    return rc, out.getvalue()


class MetricNames(unittest.TestCase):
    def test_functions_keywords_and_grouping_labels_are_not_metric_names(self):
        self.assertEqual(
            cdm.metric_names('sum by (job, instance) (rate(a_total[5m])) / on (job) group_left (x) b > bool 0.05'),
            {"a_total", "b"})

    def test_label_matchers_and_strings_are_ignored(self):
        self.assertEqual(cdm.metric_names('m{key=~"$key", other="x{y} z"} unless n{a!="sum(q)"}'), {"m", "n"})

    def test_aggregation_with_trailing_or_leading_clause_is_not_a_name(self):
        self.assertEqual(cdm.metric_names("topk by (instance) (10, m)"), {"m"})
        self.assertEqual(cdm.metric_names("sum(m) by (instance)"), {"m"})
        self.assertEqual(cdm.metric_names("count_values without (x) (\"v\", m)"), {"m"})

    def test_durations_numbers_offsets_and_subqueries_are_ignored(self):
        self.assertEqual(cdm.metric_names("max_over_time(m[5m:30s]) offset 1h30m + 1e3 * 0x1F - .5"), {"m"})

    def test_name_matcher_and_colon_names_are_found(self):
        self.assertEqual(cdm.metric_names('{__name__="raw_name"} + cluster_key:hotkey_key_hot:max'),
                         {"raw_name", "cluster_key:hotkey_key_hot:max"})

    def test_grafana_variables_are_ignored(self):
        self.assertEqual(cdm.metric_names("rate(m[$__rate_interval]) * ${factor} + [[legacy]]"), {"m"})

    def test_variable_queries_are_unwrapped(self):
        self.assertEqual(cdm._grafana_variable_expr('label_values(hotkey_build_info{job=~"$job"}, cluster)'),
                         'hotkey_build_info{job=~"$job"}')
        self.assertIsNone(cdm._grafana_variable_expr("label_values(job)"))
        self.assertEqual(cdm._grafana_variable_expr({"query": "query_result(up == 1)"}), "up == 1")

    def test_exposition_names_include_histogram_series(self):
        names = cdm.exported_names("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nplain 2\nlabelled{a=\"b\"} 3\n")
        self.assertTrue({"h", "h_bucket", "h_sum", "h_count", "plain", "labelled"} <= names)


class ShippedFiles(unittest.TestCase):
    def test_shipped_dashboard_and_rules_use_only_exported_or_recorded_names(self):
        rc, out = run(DASHBOARD, RULES, METRICS)
        self.assertEqual(rc, 0, out)

    def test_annotation_template_queries_are_checked(self):
        exprs, _ = cdm.rules_exprs({"groups": [{"rules": [{"alert": "A", "expr": "up == 0", "annotations": {
            "description": '{{ with printf "not_exported{job=%q}" $labels.job | query }}{{ end }}'}}]}]})
        self.assertIn("not_exported", set().union(*(cdm.metric_names(e) for _, e in exprs)))

    def test_every_exported_name_in_testdata_is_used_somewhere(self):
        # Keeps the sample honest: a metric that no panel shows and no rule reads is a
        # metric nobody reads (hotkey_last_event_timestamp_seconds is read by an alert only).
        with open(METRICS) as f:
            exported = cdm.exported_names(f.read())
        with open(DASHBOARD) as f:
            dash = json.load(f)
        with open(RULES) as f:
            rexprs, _ = cdm.rules_exprs(yaml.safe_load(f))
        used = set().union(*(cdm.metric_names(e) for _, e in cdm.dashboard_exprs(dash) + rexprs))
        self.assertEqual(exported - used, set())

    def test_a_misspelled_metric_fails_and_is_named(self):
        with open(DASHBOARD) as f:
            dash = json.load(f)
        dash["panels"].append({"type": "timeseries", "title": "typo",
                               "targets": [{"refId": "A", "expr": "rate(hotkey_event_received_total[5m])"}]})
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
            json.dump(dash, tmp)
        try:
            rc, out = run(tmp.name, RULES, METRICS)
        finally:
            os.unlink(tmp.name)
        self.assertEqual(rc, 1)
        self.assertIn("hotkey_event_received_total", out)
        self.assertIn('panel "typo"', out)

    def test_absent_ok_allows_only_the_names_it_matches(self):
        with open(METRICS) as f:
            text = "".join(l for l in f if "hotkey_slot_" not in l and "hotkey_key_share_threshold_ratio" not in l)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as tmp:
            tmp.write(text)
        try:
            rc_slots, out_slots = run(DASHBOARD, RULES, tmp.name, "--absent-ok", "hotkey_slot_.*")
            rc_all, out_all = run(DASHBOARD, RULES, tmp.name, "--absent-ok", "hotkey_(slot_.*|key_share_threshold_ratio)")
        finally:
            os.unlink(tmp.name)
        self.assertEqual(rc_slots, 1, out_slots)
        self.assertIn("hotkey_key_share_threshold_ratio", out_slots.split("FAIL:")[1])
        self.assertNotIn("hotkey_slot_share_ratio", out_slots.split("FAIL:")[1])
        self.assertEqual(rc_all, 0, out_all)
        self.assertIn("hotkey_slot_share_ratio", out_all)

    def test_a_metric_the_daemon_stops_exporting_fails(self):
        with open(METRICS) as f:
            text = "".join(l for l in f if "hotkey_key_share_threshold_ratio" not in l)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as tmp:
            tmp.write(text)
        try:
            rc, out = run(DASHBOARD, RULES, tmp.name)
        finally:
            os.unlink(tmp.name)
        self.assertEqual(rc, 1)
        self.assertIn("hotkey_key_share_threshold_ratio", out)
        self.assertIn('rule "HotkeydHotKey"', out)

    def test_an_empty_exposition_is_a_usage_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as tmp:
            tmp.write("")
        try:
            rc, _ = run(DASHBOARD, RULES, tmp.name)
        finally:
            os.unlink(tmp.name)
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
