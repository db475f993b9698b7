#include "tools/line_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/scoped_fd.h"

extern char** environ;

namespace nativeprof::tools {
namespace {

// environ with `overrides` replacing (or adding) their variables.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    bool replaced = false;
    for (const auto& [name, value] : overrides) {
      if (absl::StartsWith(entry, absl::StrCat(name, "="))) replaced = true;
    }
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

std::vector<char*> PointerArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

absl::StatusOr<int> RunLineCommand(const LineCommand& command,
                                   const std::function<void(absl::string_view)>& on_line,
                                   size_t max_line_bytes) {
  if (command.argv.empty()) return absl::InvalidArgumentError("no command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe");
  ScopedFd read_end(fds[0]), write_end(fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  if (!command.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, command.cwd.c_str());
  std::vector<std::string> argv = command.argv;
  std::vector<std::string> env = ChildEnvironment(command.env);
  std::vector<char*> argv_ptrs = PointerArray(argv);
  std::vector<char*> env_ptrs = PointerArray(env);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, argv_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(spawn_error)));
  }
  write_end.Reset();

  std::string line;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == '\n') {
        on_line(line);
        line.clear();
      } else if (line.size() < max_line_bytes) {
        line.push_back(buffer[i]);
      }
    }
  }
  if (!line.empty()) on_line(line);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoError("waitpid");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace nativeprof::tools
