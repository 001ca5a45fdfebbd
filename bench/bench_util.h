// What every benchmark reports beside its figures: the machine it ran on, how busy that
// machine was, CPU time, and the median [min, max] of its rounds. Header-only; benchmarks
// only.

#ifndef HOTKEY_BENCH_BENCH_UTIL_H_
#define HOTKEY_BENCH_BENCH_UTIL_H_

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace hotkey::bench {

// The CPU's model name, from /proc/cpuinfo's first "model name" line.
inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? "unknown"
                                        : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// The 1, 5 and 15 minute load averages: how busy the shared machine was.
inline std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

// CPU seconds of the calling thread, and of the whole process.
inline double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
inline double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The median (the mean of the middle two for an even count), min and max of some rounds.
struct Spread {
  double median = 0, min = 0, max = 0;
};
inline Spread SpreadOf(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}
// {"median":…,"min":…,"max":…} with `digits` significant digits.
inline std::string SpreadJson(const Spread& s, int digits = 4) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"median\":%.*g,\"min\":%.*g,\"max\":%.*g}", digits, s.median,
                digits, s.min, digits, s.max);
  return buf;
}
inline std::string SpreadJson(const std::vector<double>& v, int digits = 4) {
  return SpreadJson(SpreadOf(v), digits);
}

}  // namespace hotkey::bench

#endif  // HOTKEY_BENCH_BENCH_UTIL_H_
