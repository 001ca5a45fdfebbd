#include "factories.h"
#include "hotkey/parsers/request.h"

namespace hotkey::parsers {

std::unique_ptr<RequestParser> NewRequestParser(Protocol protocol, const ParserLimits& limits) {
  switch (protocol) {
    case Protocol::kRedis:
      return NewRespRequestParser(limits);
    case Protocol::kMemcached:
      return NewMemcachedRequestParser(limits);
  }
  return nullptr;
}

std::unique_ptr<ReplyParser> NewReplyParser(Protocol protocol, const ParserLimits& limits) {
  switch (protocol) {
    case Protocol::kRedis:
      return NewRespReplyParser(limits);
    case Protocol::kMemcached:
      return NewMemcachedReplyParser(limits);
  }
  return nullptr;
}

}  // namespace hotkey::parsers
