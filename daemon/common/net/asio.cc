// Asio (with its SSL layer) and Beast, compiled once for the whole program: the root
// CMakeLists.txt sets BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION
// for every file, so the other files that include them compile only their templates.

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
