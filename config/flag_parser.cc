// The shared command-line parser; see flag_parser.h.

#include "hotkey/config/flag_parser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl_compat.h"

namespace hotkey::config {
namespace {

using internal::Av;

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string Quoted(const std::string& value) { return value.empty() ? "\"\"" : value; }

// Appends `text` to *out as lines of at most `width` characters, each starting with
// `indent`, broken at spaces; a word longer than the room stays whole on its own line.
void AppendWrapped(std::string* out, std::string_view text, std::string_view indent, size_t width) {
  const size_t room = width > indent.size() ? width - indent.size() : 1;
  size_t line = 0;  // characters on the current line, indent excluded
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    if (line == 0) {
      absl::StrAppend(out, Av(indent), Av(word));
      line = word.size();
    } else if (line + 1 + word.size() <= room) {
      absl::StrAppend(out, " ", Av(word));
      line += 1 + word.size();
    } else {
      absl::StrAppend(out, "\n", Av(indent), Av(word));
      line = word.size();
    }
    pos = end;
  }
  out->push_back('\n');
}

}  // namespace

FlagParser::Flag& FlagParser::Add(std::string_view name, std::string_view help, bool is_bool,
                                  std::string shown,
                                  std::function<absl::Status(std::string_view)> set) {
  Flag& f = flags_.emplace_back();
  f.name_ = std::string(name);
  f.help_ = std::string(help);
  f.is_bool_ = is_bool;
  f.section_ = section_;
  f.shown_ = std::move(shown);
  f.set_ = std::move(set);
  return f;
}

FlagParser::Flag& FlagParser::AddString(std::string_view name, std::string_view help,
                                        std::string* out) {
  return Add(name, help, false, *out, [out](std::string_view text) {
    *out = std::string(text);
    return absl::OkStatus();
  });
}

FlagParser::Flag& FlagParser::AddBool(std::string_view name, std::string_view help, bool* out) {
  return Add(name, help, true, *out ? "true" : "false", [out](std::string_view text) {
    absl::StatusOr<bool> b = ParseBool(text);
    if (!b.ok()) return b.status();
    *out = *b;
    return absl::OkStatus();
  });
}

FlagParser::Flag& FlagParser::AddNumber(std::string_view name, std::string_view help, double* out) {
  return Add(name, help, false, absl::StrCat(*out), [out](std::string_view text) {
    absl::StatusOr<double> v = ParseNumber(text);
    if (!v.ok()) return v.status();
    *out = *v;
    return absl::OkStatus();
  });
}

FlagParser::Flag& FlagParser::AddDuration(std::string_view name, std::string_view help,
                                          absl::Duration* out, bool allow_infinite) {
  return Add(name, help, false, absl::FormatDuration(*out),
             [out, allow_infinite](std::string_view text) {
               absl::StatusOr<absl::Duration> d =
                   allow_infinite ? ParseDurationOrInfinite(text) : ParseDurationText(text);
               if (!d.ok()) return d.status();
               *out = *d;
               return absl::OkStatus();
             });
}

FlagParser::Flag& FlagParser::AddList(std::string_view name, std::string_view help,
                                      std::vector<std::string>* out) {
  return Add(name, help, false, "", [out](std::string_view text) {
    out->emplace_back(text);
    return absl::OkStatus();
  });
}

FlagParser::Flag& FlagParser::AddCustom(std::string_view name, std::string_view help,
                                        std::string shown,
                                        std::function<absl::Status(std::string_view)> set) {
  return Add(name, help, false, std::move(shown), std::move(set));
}

void FlagParser::AddMoved(std::string_view name, std::string_view message) {
  moved_.push_back({std::string(name), std::string(message)});
}

size_t FlagParser::AdvancedCount() const {
  return static_cast<size_t>(
      std::count_if(flags_.begin(), flags_.end(), [](const Flag& f) { return f.advanced_; }));
}

absl::StatusOr<int64_t> FlagParser::Integer(std::string_view text) { return ParseInteger(text); }
absl::StatusOr<uint64_t> FlagParser::Size(std::string_view text) { return ParseByteSize(text); }
absl::Status FlagParser::OutOfRange(std::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is out of range"));
}

const FlagParser::Flag* FlagParser::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name_ == name) return &f;
  }
  return nullptr;
}

absl::Status FlagParser::UnknownFlag(std::string_view name) const {
  const Flag* best = nullptr;
  size_t best_distance = 4;  // beyond 3 edits a suggestion is more confusing than helpful
  for (const Flag& f : flags_) {
    const size_t d = EditDistance(name, f.name_);
    if (d < best_distance) {
      best = &f;
      best_distance = d;
    }
  }
  const std::string hint = best ? absl::StrCat("; did you mean --", best->name_, "?") : "";
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag --", Av(name), hint, " (see --help)"));
}

absl::StatusOr<FlagParser::Parsed> FlagParser::Parse(
    const std::vector<std::string_view>& args) const {
  Parsed result;
  // -h and --help win over anything else on the line, even bad flags.
  for (std::string_view arg : args) {
    if (arg == "--" && positional_ == Positional::kAccept) break;
    if (arg == "-h" || arg == "--help") {
      result.help = true;
      return result;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (positional_ == Positional::kAccept) {
      if (arg == "--") {
        result.positional.insert(result.positional.end(), args.begin() + i + 1, args.end());
        break;
      }
      if (!arg.starts_with("--")) {
        result.positional.emplace_back(arg);
        continue;
      }
    } else if (!arg.starts_with("--") || arg == "--") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument \"", Av(arg), "\": ", program_, " takes only --flags (see --help)"));
    }
    std::string_view name = arg.substr(2);
    std::string_view value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      for (const Moved& m : moved_) {
        if (m.name == name) return absl::InvalidArgumentError(m.message);
      }
      return UnknownFlag(name);
    }
    if (!has_value) {
      if (flag->is_bool_) {
        value = "true";
      } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", Av(name), " needs a value (--",
                                                       Av(name), "=VALUE or --", Av(name),
                                                       " VALUE)"));
      }
    }
    if (absl::Status s = flag->set_(value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", Av(name), ": ", s.message()));
    }
    result.given.emplace_back(name);
  }
  return result;
}

absl::StatusOr<FlagParser::Parsed> FlagParser::Parse(int argc, const char* const* argv) const {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

std::string FlagParser::Help(HelpScope scope) const {
  // Sections in the order of their first flag, each flag under its own section.
  std::vector<std::string_view> sections;
  for (const Flag& f : flags_) {
    if (std::find(sections.begin(), sections.end(), f.section_) == sections.end()) {
      sections.push_back(f.section_);
    }
  }
  std::string out;
  for (std::string_view section : sections) {
    std::string body;
    for (const Flag& f : flags_) {
      if (f.section_ != section || (f.advanced_ && scope != HelpScope::kAll)) continue;
      if (f.is_bool_) {
        absl::StrAppend(&body, "  --", f.name_, "\n");
        AppendWrapped(&body, absl::StrCat(f.help_, " (default: ", f.shown_, ")"), "        ",
                      kHelpWidth);
      } else {
        absl::StrAppend(&body, "  --", f.name_, "=", Quoted(f.shown_), "\n");
        AppendWrapped(&body, f.help_, "        ", kHelpWidth);
      }
    }
    if (body.empty()) continue;
    if (!out.empty()) out += "\n";
    if (!section.empty()) absl::StrAppend(&out, Av(section), ":\n");
    out += body;
  }
  return out;
}

}  // namespace hotkey::config
