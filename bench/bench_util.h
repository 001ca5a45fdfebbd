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

// The machine as a JSON object: the first CPU's model name, family and model number, the
// logical CPUs, whether it is a guest (the "hypervisor" flag), and LoadAvg().
inline std::string MachineJson() {
  std::string model = "unknown", family = "?", model_no = "?";
  int cpus = 0;
  bool hypervisor = false;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    const size_t start = line.find_first_not_of(' ', colon + 1);
    const std::string value = start == std::string::npos ? "" : line.substr(start);
    if (name == "processor") ++cpus;
    if (cpus > 1) continue;  // the first CPU describes them all
    if (name == "model name") model = value;
    if (name == "cpu family") family = value;
    if (name == "model") model_no = value;
    if (name == "flags") hypervisor = value.find("hypervisor") != std::string::npos;
  }
  for (std::string* field : {&model, &family, &model_no}) {
    for (char& ch : *field) {
      if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = ' ';
    }
  }
  return "{\"cpu\":\"" + model + "\",\"cpu_family\":\"" + family + "\",\"cpu_model\":\"" +
         model_no + "\",\"logical_cpus\":" + std::to_string(cpus) +
         ",\"hypervisor\":" + (hypervisor ? "true" : "false") + ",\"loadavg_1_5_15\":\"" +
         LoadAvg() + "\"}";
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
