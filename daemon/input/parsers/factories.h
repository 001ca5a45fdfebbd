// The parsers' constructors, one pair per protocol (resp.cc, memcached.cc); parsers.cc
// picks one for NewRequestParser and NewReplyParser.

#ifndef HOTKEY_PARSERS_FACTORIES_H_
#define HOTKEY_PARSERS_FACTORIES_H_

#include <memory>

#include "hotkey/parsers/request.h"

namespace hotkey::parsers {

std::unique_ptr<RequestParser> NewRespRequestParser(const ParserLimits& limits);
std::unique_ptr<ReplyParser> NewRespReplyParser(const ParserLimits& limits);
std::unique_ptr<RequestParser> NewMemcachedRequestParser(const ParserLimits& limits);
std::unique_ptr<ReplyParser> NewMemcachedReplyParser(const ParserLimits& limits);

}  // namespace hotkey::parsers

#endif  // HOTKEY_PARSERS_FACTORIES_H_
