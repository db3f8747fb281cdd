// heapwatchctl's API credential: the secret of `--token-file PATH` (or of the file named by the
// environment variable HEAPWATCH_TOKEN_FILE when the option is absent), sent by ctl/rpc.h as
// `authorization: Bearer SECRET` (docs/security.md).
//
// Thread-safety: LoadToken reads the environment; call it from one thread before any RPC.
#ifndef HEAPWATCH_CTL_TOKEN_FILE_H_
#define HEAPWATCH_CTL_TOKEN_FILE_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "ctl/command.h"

namespace heapwatch::ctl {

// The secret in the text of a token file: its first line without surrounding blanks (spaces, tabs,
// CR). Errors: InvalidArgument when it is empty, longer than 4096 bytes, or holds a byte that is
// not printable ASCII or a blank inside the secret (`what` names the file in the message; the
// secret itself is never quoted).
StatusOr<std::string> ParseTokenFileText(std::string_view text, std::string_view what);

// Sets global->token from global->token_file, or from $HEAPWATCH_TOKEN_FILE when token_file is
// empty (and then sets token_file to it). No file at all leaves the token empty (no credential).
// Errors: NotFound / PermissionDenied when the file cannot be read; ParseTokenFileText's.
Status LoadToken(GlobalOptions* global);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_TOKEN_FILE_H_
