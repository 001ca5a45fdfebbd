// Certificates for the TLS tests, made with openssl: a CA, a server certificate for
// localhost and 127.0.0.1, and a client certificate.

#ifndef HOTKEY_TESTS_SHARD_CERTIFICATES_H_
#define HOTKEY_TESTS_SHARD_CERTIFICATES_H_

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

namespace hotkey::testing {

// Writes ca.pem/ca.key, server.pem/server.key and client.pem/client.key into `d`.
inline void MakeCertificates(const std::string& d) {
  const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string cmd = absl::StrCat(
      "(cd ", d, " && ", HOTKEY_OPENSSL, " req -x509", key,
      " -keyout ca.key -out ca.pem -days 1 -subj /CN=hotkey-test-ca && ", HOTKEY_OPENSSL, " req",
      key, " -keyout server.key -out server.csr -subj /CN=localhost && ",
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext && ", HOTKEY_OPENSSL,
      " x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem",
      " -days 1 -extfile server.ext && ", HOTKEY_OPENSSL, " req", key,
      " -keyout client.key -out client.csr -subj /CN=hotkeyd && ", HOTKEY_OPENSSL,
      " x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem",
      " -days 1) >", d, "/openssl.log 2>&1");
  REQUIRE(std::system(cmd.c_str()) == 0);
}

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_SHARD_CERTIFICATES_H_
