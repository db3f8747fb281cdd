// The deployment files (deploy/: systemd unit, Kubernetes DaemonSet, container build file) agree
// with each other and with the binaries built here: the daemon accepts the flags each one passes,
// the DaemonSet adds exactly the capabilities the unit's bounding set lists, and the container's
// runtime packages provide every shared library the binaries link (docs/deployment.md).
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace {

const std::string kSource = HEAPWATCH_SOURCE_DIR;
const std::string kDaemon = HEAPWATCHD_PATH;
const std::string kCtl = HEAPWATCHCTL_PATH;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command; returns its exit status and standard output (stderr joined).
std::pair<int, std::string> RunShell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Values of `Key=` lines of a systemd unit.
std::vector<std::string> UnitValues(const std::string& unit, const std::string& key) {
  std::vector<std::string> values;
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + "=", 0) == 0) values.push_back(line.substr(key.size() + 1));
  }
  return values;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The daemon's flags from a deployment file, with the paths of the installed system replaced by the
// repository's files, checked by `heapwatchd --print-config` (which parses flags and configuration
// and exits): every flag exists and the configuration is valid.
void ExpectDaemonAccepts(std::vector<std::string> args, const std::string& what) {
  const std::string tokens = ::testing::TempDir() + "/deploy_files_test_tokens";
  {
    std::ofstream t(tokens);
    t << "# no tokens\n";
  }
  std::string command = Quote(kDaemon);
  for (std::string& a : args) {
    for (const std::string& config : {std::string("/etc/heapwatch/heapwatchd.yml")}) {
      const size_t at = a.find(config);
      if (at != std::string::npos) a.replace(at, config.size(), kSource + "/deploy/heapwatchd.yml");
    }
    const size_t at = a.find("/etc/heapwatch/tokens/tokens");
    if (at != std::string::npos)
      a.replace(at, std::string("/etc/heapwatch/tokens/tokens").size(), tokens);
    command += " " + Quote(a);
  }
  command += " --print-config";
  auto [status, out] = RunShell(command);
  EXPECT_EQ(status, 0) << what << ": " << command << "\n" << out;
}

TEST(DeployFiles, SystemdUnitStartsTheDaemonWithValidFlags) {
  const std::string unit = ReadFile(kSource + "/deploy/systemd/heapwatchd.service");
  ASSERT_FALSE(unit.empty());
  auto exec = UnitValues(unit, "ExecStart");
  ASSERT_EQ(exec.size(), 1u);
  std::vector<std::string> words = Words(exec[0]);
  ASSERT_FALSE(words.empty());
  EXPECT_EQ(words[0], "/usr/local/bin/heapwatchd");
  words.erase(words.begin());
  ExpectDaemonAccepts(words, "the systemd unit's ExecStart");
  // The hardening this unit documents: /tmp shared with the JVMs, every process visible.
  EXPECT_THAT(UnitValues(unit, "PrivateTmp"), ::testing::ElementsAre("no"));
  EXPECT_THAT(UnitValues(unit, "NoNewPrivileges"), ::testing::ElementsAre("yes"));
  EXPECT_THAT(UnitValues(unit, "ProtectSystem"), ::testing::ElementsAre("strict"));
}

TEST(DeployFiles, SystemdAnalyzeVerifiesTheUnit) {
  // systemd-analyze checks the unit's syntax and that the ExecStart binary exists; point it at the
  // binary built here.
  std::string unit = ReadFile(kSource + "/deploy/systemd/heapwatchd.service");
  const std::string from = "/usr/local/bin/heapwatchd";
  unit.replace(unit.find(from), from.size(), kDaemon);
  const std::string dir = ::testing::TempDir() + "/deploy_files_test_unit";
  ASSERT_EQ(RunShell("mkdir -p " + Quote(dir)).first, 0);
  const std::string path = dir + "/heapwatchd.service";
  std::ofstream(path) << unit;
  auto [status, out] = RunShell("systemd-analyze verify " + Quote(path));
  EXPECT_EQ(status, 0) << out;
  // Warnings about the unit itself (unknown keys, bad values) name it; other units of the machine
  // may be noisy, so only lines about this file count.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.find("heapwatchd.service"), std::string::npos) << line;
  }
}

TEST(DeployFiles, DaemonSetAddsExactlyTheUnitsCapabilities) {
  const std::string unit = ReadFile(kSource + "/deploy/systemd/heapwatchd.service");
  auto bounding = UnitValues(unit, "CapabilityBoundingSet");
  ASSERT_EQ(bounding.size(), 1u);
  std::set<std::string> unit_caps;
  for (const std::string& c : Words(bounding[0])) {
    ASSERT_EQ(c.rfind("CAP_", 0), 0u) << c;
    unit_caps.insert(c.substr(4));
  }

  std::vector<YAML::Node> docs =
      YAML::LoadAllFromFile(kSource + "/deploy/kubernetes/heapwatchd-daemonset.yaml");
  const YAML::Node* daemonset = nullptr;
  for (const YAML::Node& d : docs) {
    if (d["kind"] && d["kind"].as<std::string>() == "DaemonSet") daemonset = &d;
  }
  ASSERT_NE(daemonset, nullptr);
  const YAML::Node spec = (*daemonset)["spec"]["template"]["spec"];
  EXPECT_TRUE(spec["hostPID"].as<bool>());
  ASSERT_EQ(spec["containers"].size(), 1u);
  const YAML::Node container = spec["containers"][0];
  const YAML::Node security = container["securityContext"];
  EXPECT_FALSE(security["privileged"].as<bool>());
  EXPECT_FALSE(security["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(security["readOnlyRootFilesystem"].as<bool>());
  EXPECT_EQ(security["capabilities"]["drop"].as<std::vector<std::string>>(),
            std::vector<std::string>{"ALL"});
  auto added = security["capabilities"]["add"].as<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(added.begin(), added.end()), unit_caps);

  // The container's arguments follow the image's entrypoint; both must be accepted.
  ExpectDaemonAccepts(container["args"].as<std::vector<std::string>>(), "the DaemonSet's args");
}

// Debian 12 packages of the shared libraries a binary links: one `dpkg -S` over every resolved ldd
// path, each also tried with and without /usr (Debian 12 merges /lib into /usr/lib, and dpkg knows
// only one of the two names).
std::set<std::string> LinkedPackages(const std::string& binary) {
  auto [status, out] =
      RunShell("ldd " + Quote(binary) + " | sed -n 's/.*=> \\(\\/[^ ]*\\).*/\\1/p'" +
               " | xargs -r readlink -f");
  EXPECT_EQ(status, 0) << out;
  std::vector<std::string> paths = Words(out);
  EXPECT_FALSE(paths.empty()) << out;
  std::string command = "dpkg -S";
  for (const std::string& p : paths) {
    command += " " + Quote(p) + " " + Quote(p.rfind("/usr/", 0) == 0 ? p.substr(4) : "/usr" + p);
  }
  auto owners = RunShell(command).second;  // exits 1: half of the candidates are unknown
  std::set<std::string> packages;
  std::set<std::string> owned;
  std::istringstream lines(owners);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(": /");
    if (colon == std::string::npos) continue;
    packages.insert(line.substr(0, line.find_first_of(":")));
    std::string path = line.substr(colon + 2);
    owned.insert(path);
    owned.insert(path.rfind("/usr/", 0) == 0 ? path.substr(4) : "/usr" + path);
  }
  for (const std::string& p : paths)
    EXPECT_TRUE(owned.contains(p)) << "no Debian package owns " << p;
  return packages;
}

TEST(DeployFiles, ContainerRuntimePackagesProvideEveryLinkedLibrary) {
  const std::string file = ReadFile(kSource + "/deploy/container/Containerfile");
  const size_t runtime = file.find("# RUNTIME_PACKAGES:");
  ASSERT_NE(runtime, std::string::npos);
  const size_t install = file.find("apt-get install", runtime);
  const size_t end = file.find("&&", file.find("--no-install-recommends", install));
  ASSERT_NE(end, std::string::npos);
  std::string list = file.substr(install, end - install);
  std::replace(list.begin(), list.end(), '\\', ' ');
  std::set<std::string> listed;
  for (const std::string& w : Words(list)) listed.insert(w);
  // Essential packages of every Debian 12 image (debian:12-slim included).
  for (const char* base : {"libc6", "libgcc-s1", "zlib1g"}) listed.insert(base);
  for (const std::string& binary : {kDaemon, kCtl}) {
    for (const std::string& package : LinkedPackages(binary)) {
      EXPECT_TRUE(listed.contains(package))
          << binary << " links a library of " << package
          << ", which the Containerfile's runtime stage does not install";
    }
  }
  // The entrypoint's flags are the daemon's.
  const size_t entry = file.find("ENTRYPOINT [");
  ASSERT_NE(entry, std::string::npos);
  std::string array = file.substr(entry + 11, file.find(']', entry) - entry - 10);
  std::replace(array.begin(), array.end(), '\\', ' ');  // line continuations
  YAML::Node node = YAML::Load(array);                  // a JSON array is YAML
  auto args = node.as<std::vector<std::string>>();
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "/usr/local/bin/heapwatchd");
  args.erase(args.begin());
  ExpectDaemonAccepts(args, "the container's ENTRYPOINT");
}

}  // namespace
