// The name tables of the options' enums (and the strategies the rules file and flags name):
// every value named, every name parsed back (tests/lib/enum_table_check.h).

#include <catch2/catch.hpp>

#include "enum_table_check.h"
#include "hotkey/config/options.h"
#include "hotkey/config/web_config.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::config {
namespace {

using ::hotkey::testing::CheckEnumTable;

bool IsKeyLabelMode(KeyLabelMode m) {
  switch (m) {
    case KeyLabelMode::kRaw:
    case KeyLabelMode::kHash:
    case KeyLabelMode::kPrefix:
      return true;
  }
  return false;
}

bool IsTapProtocol(TapProtocol p) {
  switch (p) {
    case TapProtocol::kRedis:
    case TapProtocol::kMemcached:
      return true;
  }
  return false;
}

bool IsTapWeight(TapWeight w) {
  switch (w) {
    case TapWeight::kOps:
    case TapWeight::kBytes:
      return true;
  }
  return false;
}

bool IsClientAuthType(ClientAuthType t) {
  switch (t) {
    case ClientAuthType::kNoClientCert:
    case ClientAuthType::kRequestClientCert:
    case ClientAuthType::kRequireAnyClientCert:
    case ClientAuthType::kVerifyClientCertIfGiven:
    case ClientAuthType::kRequireAndVerifyClientCert:
      return true;
  }
  return false;
}

bool IsTlsVersion(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10:
    case TlsVersion::kTls11:
    case TlsVersion::kTls12:
    case TlsVersion::kTls13:
      return true;
  }
  return false;
}

bool IsStrategy(model::Strategy s) {
  switch (s) {
    case model::Strategy::kNone:
    case model::Strategy::kCache:
    case model::Strategy::kReplicate:
    case model::Strategy::kSplit:
    case model::Strategy::kSplitCache:
    case model::Strategy::kIsolate:
      return true;
  }
  return false;
}

TEST_CASE("Enum tables: every option enum value has one name that parses back",
          "[config][enum_names]") {
  CheckEnumTable(kKeyLabelModeNames, &IsKeyLabelMode);
  CheckEnumTable(kTapProtocolNames, &IsTapProtocol);
  CheckEnumTable(kTapWeightNames, &IsTapWeight);
  CheckEnumTable(kClientAuthTypeNames, &IsClientAuthType);
  CheckEnumTable(kTlsVersionNames, &IsTlsVersion, 0xFFFF);
  CheckEnumTable(model::kStrategyNames, &IsStrategy);
  // The toolkit's old name reads as the new one, which is the one shown.
  CHECK(text::ParseName(kClientAuthTypeNames, "RequireClientCert", "").value() ==
        ClientAuthType::kRequireAnyClientCert);
  CHECK(text::NameOf(kClientAuthTypeNames, ClientAuthType::kRequireAnyClientCert) ==
        "RequireAnyClientCert");
}

}  // namespace
}  // namespace hotkey::config
