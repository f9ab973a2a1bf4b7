// Resolution of MASTER_ADDR (see master_addr.hpp).
#include "master_addr.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <memory>
#include <vector>

namespace llmrdzv::spank {
namespace {

std::vector<in_addr> ipv4_addresses(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    throw ArgError("addr: cannot resolve the first node '" + host + "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  std::vector<in_addr> addresses;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    addresses.push_back(reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr);
  }
  return addresses;
}

std::string text(in_addr address) {
  char buffer[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address, buffer, sizeof buffer);
  return buffer;
}

struct Subnet {
  in_addr_t network = 0;  // host byte order
  in_addr_t mask = 0;
};

Subnet interface_subnet(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw ArgError("addr: cannot list network interfaces");
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, freeifaddrs);
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_netmask == nullptr || ifa->ifa_addr->sa_family != AF_INET ||
        name != ifa->ifa_name) {
      continue;
    }
    const auto address = ntohl(reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr.s_addr);
    const auto mask = ntohl(reinterpret_cast<const sockaddr_in*>(ifa->ifa_netmask)->sin_addr.s_addr);
    return {address & mask, mask};
  }
  throw ArgError("addr: iface:" + name + ": this node has no interface " + name + " with an IPv4 address");
}

}  // namespace

std::string master_address(const AddrPolicy& policy, const std::string& first_node) {
  switch (policy.kind) {
    case AddrPolicy::Kind::hostname:
      return first_node;
    case AddrPolicy::Kind::ip:
      return text(ipv4_addresses(first_node).front());
    case AddrPolicy::Kind::iface: {
      const Subnet subnet = interface_subnet(policy.iface);
      for (const in_addr address : ipv4_addresses(first_node)) {
        if ((ntohl(address.s_addr) & subnet.mask) == subnet.network) return text(address);
      }
      throw ArgError("addr: iface:" + policy.iface + ": the first node '" + first_node +
                     "' has no address in the subnet of " + policy.iface);
    }
  }
  throw ArgError("addr: unknown policy");
}

}  // namespace llmrdzv::spank
