// The name tables of the enums the snapshot, its metrics and the API name (and of those
// below them: the UDP rejections, a key's access, the CPU source): every value named, every name
// parsed back (tests/lib/enum_table_check.h).

#include <catch2/catch.hpp>

#include "enum_table_check.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/aggregate/model_inputs.h"
#include "hotkey/aggregate/slots.h"
#include "hotkey/parsers/request.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/shard/prober.h"

namespace hotkey::aggregate {
namespace {

using ::hotkey::testing::CheckEnumTable;

bool IsKind(EpisodeLog::Kind k) {
  switch (k) {
    case EpisodeLog::Kind::kKey:
    case EpisodeLog::Kind::kSlot:
    case EpisodeLog::Kind::kTag:
      return true;
  }
  return false;
}

bool IsSlotAdvice(SlotAdvice a) {
  switch (a) {
    case SlotAdvice::kNone:
    case SlotAdvice::kKey:
    case SlotAdvice::kTag:
    case SlotAdvice::kMove:
      return true;
  }
  return false;
}

bool IsInputOrigin(InputOrigin o) {
  switch (o) {
    case InputOrigin::kConfigured:
    case InputOrigin::kMeasured:
    case InputOrigin::kUnknown:
      return true;
  }
  return false;
}

bool IsResolution(History::Resolution r) {
  switch (r) {
    case History::Resolution::kFine:
    case History::Resolution::kCoarse:
      return true;
  }
  return false;
}

bool IsReject(parsers::Reject r) {
  switch (r) {
    case parsers::Reject::kEmptyLine:
    case parsers::Reject::kUnknownOp:
    case parsers::Reject::kMissingKey:
    case parsers::Reject::kKeyTooLong:
    case parsers::Reject::kBadNumber:
    case parsers::Reject::kBadHeader:
      return true;
  }
  return false;
}

bool IsAccess(parsers::Access a) {
  switch (a) {
    case parsers::Access::kRead:
    case parsers::Access::kWrite:
      return true;
  }
  return false;
}

bool IsCpusSource(shard::CpusSource s) {
  switch (s) {
    case shard::CpusSource::kOneCore:
    case shard::CpusSource::kThreads:
    case shard::CpusSource::kCgroupQuota:
    case shard::CpusSource::kFlag:
      return true;
  }
  return false;
}

TEST_CASE("Enum tables: every value the snapshot names has one name that parses back",
          "[aggregate][enum_names]") {
  CheckEnumTable(EpisodeLog::kKindNames, &IsKind);
  CheckEnumTable(kSlotAdviceNames, &IsSlotAdvice);
  CheckEnumTable(kInputOriginNames, &IsInputOrigin);
  CheckEnumTable(History::kResolutionNames, &IsResolution);
  CheckEnumTable(parsers::kRejectNames, &IsReject);
  CheckEnumTable(parsers::kAccessNames, &IsAccess);
  CheckEnumTable(shard::kCpusSourceNames, &IsCpusSource);
  // No advice is named by its absence (null in the API, no sample in /metrics).
  CHECK(SlotAdviceName(SlotAdvice::kNone).empty());
}

}  // namespace
}  // namespace hotkey::aggregate
