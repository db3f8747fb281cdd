#include "ctl/tls_options.h"

#include <cstdlib>
#include <string>

#include "auth/tls.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace heapwatch::ctl {
namespace {

void FromEnvironment(std::string* option, const char* variable) {
  if (!option->empty()) return;
  const char* value = std::getenv(variable);
  if (value != nullptr) *option = value;
}

}  // namespace

Status LoadTls(GlobalOptions* global) {
  FromEnvironment(&global->tls_ca_file, "HEAPWATCH_TLS_CA");
  FromEnvironment(&global->tls_cert_file, "HEAPWATCH_TLS_CERT");
  FromEnvironment(&global->tls_key_file, "HEAPWATCH_TLS_KEY");
  if (global->tls_ca_file.empty() && global->tls_cert_file.empty() &&
      global->tls_key_file.empty()) {
    if (!global->tls_server_name.empty()) {
      return absl::InvalidArgumentError(
          "--tls-server-name needs TLS (--tls-ca FILE, or --tls-cert FILE --tls-key FILE)");
    }
    return absl::OkStatus();
  }
  auth::TlsClientFiles files;
  files.ca_file = global->tls_ca_file;
  files.cert_file = global->tls_cert_file;
  files.key_file = global->tls_key_file;
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key must be given together (or HEAPWATCH_TLS_CERT and "
        "HEAPWATCH_TLS_KEY)");
  }
  HW_ASSIGN_OR_RETURN(global->channel_credentials, auth::MakeClientCredentials(files));
  return absl::OkStatus();
}

std::shared_ptr<grpc::Channel> MakeChannel(const GlobalOptions& global) {
  if (global.channel_credentials == nullptr) {
    return grpc::CreateChannel(global.server, grpc::InsecureChannelCredentials());
  }
  grpc::ChannelArguments args;
  if (!global.tls_server_name.empty()) args.SetSslTargetNameOverride(global.tls_server_name);
  return grpc::CreateCustomChannel(global.server, global.channel_credentials, args);
}

}  // namespace heapwatch::ctl
