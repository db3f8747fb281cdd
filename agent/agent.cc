// libheapwatch_agent.so: the JVMTI entry points and the agent's JVM thread (docs/agent.md).
//
// Threads (all created with JVMTI RunAgentThread, daemon threads of the JVM):
//   heapwatch-agent            JVM work: reads the GC counters, runs GC.class_histogram and heap
//                              dumps through JNI (agent/diagnostic_command.h), hands results to
//                              the Session.
//   heapwatch-agent-io         Session::RunWriter: connect, register, send, heartbeats, backoff.
//   heapwatch-agent-io-reader  Session::RunReader: reads the daemon's messages.
//   heapwatch-agent-upload     uploads extended dumps (agent/dump_upload.h) and deletes them.
// The GarbageCollectionFinish callback only sets an atomic flag (JVMTI allows nothing more than raw
// monitors and memory functions there); the JVM thread notices it within 200 ms and reads the
// hsperfdata counters. No call into the JVM ever happens on a gRPC thread.
//
// Never brings the JVM down: every failure (bad options, unreadable token, no JVMTI, no daemon) is
// logged once on stderr as "heapwatch-agent: ..." and Agent_OnLoad returns JNI_OK.
#include <dirent.h>
#include <jni.h>
#include <jvmti.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/delivery.h"
#include "agent/diagnostic_command.h"
#include "agent/dump_upload.h"
#include "agent/options.h"
#include "agent/session.h"
#include "collectors/agent_identity.h"
#include "collectors/class_histogram.h"
#include "collectors/gc_counters.h"
#include "collectors/pause_budget.h"
#include "collectors/perf_data.h"
#include "collectors/procfs.h"
#include "grpc/support/log.h"
#include "proto/agent_mode.h"
#include "proto/time_util.h"

#ifndef HEAPWATCH_AGENT_VERSION
#define HEAPWATCH_AGENT_VERSION "0.0.0"
#endif

namespace heapwatch::agent {
namespace {

constexpr uint32_t kProtocolVersion = 1;
// How often the JVM thread wakes up to look at the GC flag and the GC counters.
constexpr absl::Duration kPoll = absl::Milliseconds(200);
// GC counters are read at least this often (live-set points without a GC event).
constexpr absl::Duration kCounterInterval = absl::Seconds(1);
// The JVM's own old-generation collection counts as "just happened" (a -all histogram holds the
// least garbage) for this long after the agent saw it: two polls.
constexpr absl::Duration kNaturalGcFresh = absl::Milliseconds(400);
// A natural old-generation collection makes a histogram due this early (fraction of the
// interval), as the daemon's scheduler expedites attach agents (its jitter's default).
constexpr double kEarlyFraction = 0.9;

void Log(const std::string& message) {
  std::fprintf(stderr, "heapwatch-agent: %s\n", message.c_str());
  std::fflush(stderr);
}

// gRPC core's own log lines (gpr_log), dropped: it writes one to stderr at every failed TLS
// handshake ("Handshake failed with fatal error SSL_ERROR_SSL ..."), so a daemon whose certificate
// the agent does not trust would put a line on the JVM's stderr at every reconnect, forever. The
// agent logs the failure itself, once, with gRPC's reason (the status carries it).
void DropGrpcLog(gpr_log_func_args*) {}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// The hsperfdata file this JVM maps (whatever its temporary directory), from /proc/self/maps.
std::string OwnPerfDataPath() {
  StatusOr<std::string> maps = collectors::procfs::ReadSmallFile("/proc/self/maps", 64 << 20);
  std::string suffix = absl::StrCat("/", getpid());
  if (maps.ok()) {
    for (absl::string_view line : absl::StrSplit(*maps, '\n')) {
      size_t at = line.find("/hsperfdata_");
      if (at == absl::string_view::npos) continue;
      size_t start = line.rfind(' ', at);
      absl::string_view path = line.substr(start == absl::string_view::npos ? 0 : start + 1);
      if (absl::EndsWith(path, suffix)) return std::string(path);
    }
  }
  return "";
}

v1::HistogramMode ModeOrDefault(v1::HistogramMode mode) {
  return mode == v1::HISTOGRAM_MODE_UNSPECIFIED ? v1::HISTOGRAM_MODE_LIVE : mode;
}

std::optional<absl::Duration> ProtoDuration(const google::protobuf::Duration& d) {
  StatusOr<absl::Duration> r = proto::FromDuration(d);
  if (!r.ok() || *r <= absl::ZeroDuration()) return std::nullopt;
  return *r;
}

// The pause budget the daemon pushed (AgentConfig fields 50-52), or for a daemon older than them
// the fraction pause_budget / histogram_interval; nullopt without either (no budget: every due
// histogram is taken).
std::optional<collectors::PauseBudgetOptions> BudgetOptionsOf(const v1::AgentConfig& c,
                                                              absl::Duration interval) {
  collectors::PauseBudgetOptions o;
  double fraction = c.pause_budget_fraction();
  if (!(fraction > 0 && fraction <= 1)) {
    std::optional<absl::Duration> per_interval = ProtoDuration(c.pause_budget());
    if (!per_interval.has_value()) return std::nullopt;
    fraction = std::min(1.0, absl::FDivDuration(*per_interval, interval));
  }
  o.fraction = fraction;
  o.credit_window = ProtoDuration(c.pause_budget_window()).value_or(absl::Minutes(10));
  o.max_interval = std::max(ProtoDuration(c.max_interval()).value_or(absl::Hours(6)), interval);
  return o;
}

std::string SecondsText(absl::Duration d) {
  return absl::StrFormat("%.3gs", absl::ToDoubleSeconds(d));
}

class Agent final : public Session::Listener {
 public:
  Agent(jvmtiEnv* jvmti, AgentOptions options) : jvmti_(jvmti), options_(std::move(options)) {}

  // Starts the three agent threads. Live phase only (VMInit, or Agent_OnAttach).
  Status Start(JNIEnv* jni) {
    HW_RETURN_IF_ERROR(StartThread(jni, "heapwatch-agent", &WorkerMain));
    HW_RETURN_IF_ERROR(StartThread(jni, "heapwatch-agent-io", &WriterMain));
    HW_RETURN_IF_ERROR(StartThread(jni, "heapwatch-agent-io-reader", &ReaderMain));
    HW_RETURN_IF_ERROR(StartThread(jni, "heapwatch-agent-upload", &UploadMain));
    return absl::OkStatus();
  }

  void OnConfig(const v1::AgentConfig& config) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      config_ = config;
    }
    cv_.notify_all();
  }

  void OnHistogramRequest(const v1::HistogramRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (requests_.size() < 64) requests_.push_back(request);
    }
    cv_.notify_all();
  }

  void OnDumpRequest(const v1::DumpRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dump_requests_.size() < 4) dump_requests_.push_back(request);
    }
    cv_.notify_all();
  }

  // GarbageCollectionFinish: nothing but an atomic store (JVMTI: no JNI, no JVMTI but raw
  // monitors).
  void OnGcFinish() { gc_finished_.store(true, std::memory_order_relaxed); }

  // VMDeath: stop the threads and give them a moment to leave gRPC before the process exits.
  void OnVmDeath() {
    Session* session = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
      session = session_.get();
    }
    cv_.notify_all();
    if (session != nullptr) session->Shutdown();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(2), [this] { return running_ == 0; });
  }

 private:
  static void JNICALL WorkerMain(jvmtiEnv*, JNIEnv* jni, void* arg) {
    static_cast<Agent*>(arg)->Worker(jni);
  }
  static void JNICALL WriterMain(jvmtiEnv*, JNIEnv*, void* arg) {
    auto* agent = static_cast<Agent*>(arg);
    if (Session* s = agent->WaitForSession()) s->RunWriter();
    agent->ThreadExit();
  }
  static void JNICALL ReaderMain(jvmtiEnv*, JNIEnv*, void* arg) {
    auto* agent = static_cast<Agent*>(arg);
    if (Session* s = agent->WaitForSession()) s->RunReader();
    agent->ThreadExit();
  }

  static void JNICALL UploadMain(jvmtiEnv*, JNIEnv*, void* arg) {
    auto* agent = static_cast<Agent*>(arg);
    if (Session* s = agent->WaitForSession()) agent->UploadLoop(*s);
    agent->ThreadExit();
  }

  Status StartThread(JNIEnv* jni, const char* name, jvmtiStartFunction body) {
    jclass thread_class = jni->FindClass("java/lang/Thread");
    jmethodID ctor =
        thread_class ? jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/String;)V") : nullptr;
    jstring jname = ctor ? jni->NewStringUTF(name) : nullptr;
    jobject thread = jname ? jni->NewObject(thread_class, ctor, jname) : nullptr;
    if (thread == nullptr || jni->ExceptionCheck()) {
      jni->ExceptionClear();
      return absl::InternalError(absl::StrCat("cannot create thread object ", name));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_;
    }
    jvmtiError err = jvmti_->RunAgentThread(thread, body, this, JVMTI_THREAD_NORM_PRIORITY);
    jni->DeleteLocalRef(thread);
    jni->DeleteLocalRef(jname);
    jni->DeleteLocalRef(thread_class);
    if (err != JVMTI_ERROR_NONE) {
      ThreadExit();
      return absl::InternalError(absl::StrCat("RunAgentThread ", name, " failed: error ", err));
    }
    return absl::OkStatus();
  }

  void ThreadExit() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    cv_.notify_all();
  }

  Session* WaitForSession() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return session_ != nullptr || shutdown_; });
    return shutdown_ ? nullptr : session_.get();
  }

  std::string SystemProperty(const char* name) {
    char* value = nullptr;
    if (jvmti_->GetSystemProperty(name, &value) != JVMTI_ERROR_NONE || value == nullptr) return "";
    std::string out = value;
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(value));
    return out;
  }

  // Register: the id exactly as the daemon builds it for this JVM through the attach socket
  // (collectors::ReadAgentInfo: hsperfdata sun.rt.createVmBeginTime).
  v1::Register BuildRegistration() {
    v1::Register r;
    std::string host = HostName();
    int64_t pid = getpid();
    absl::Time start = absl::InfinitePast();
    std::string main_class;
    std::optional<collectors::PerfData> perf;
    // The JVM records sun.rt.createVmBeginTime at the very end of its start-up, after VMInit:
    // wait for it (this runs on the agent's thread; the application is not held up).
    for (int attempt = 0; attempt < 100 && !perf_path_.empty(); ++attempt) {
      StatusOr<collectors::PerfData> p = collectors::PerfData::ReadFile(perf_path_);
      if (p.ok() && p->GetLong("sun.rt.createVmBeginTime").value_or(0) > 0) {
        perf = std::move(*p);
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    if (perf.has_value()) {
      std::optional<int64_t> ms = perf->GetLong("sun.rt.createVmBeginTime");
      if (ms.has_value() && *ms > 0) start = absl::FromUnixMillis(*ms);
      main_class =
          collectors::MainClassFromJavaCommand(perf->GetString("sun.rt.javaCommand").value_or(""));
      StatusOr<collectors::GcCounters> gc = collectors::ReadGcCounters(*perf);
      if (gc.ok()) {
        std::vector<std::string> names;
        for (const auto& c : gc->collectors) names.push_back(c.name);
        r.set_garbage_collector(absl::StrJoin(names, ","));
      }
    }
    if (start == absl::InfinitePast()) {
      // No hsperfdata (-XX:-UsePerfData): the daemon cannot see this JVM through attach either;
      // the process start time keeps the id stable for the JVM's life.
      StatusOr<absl::Time> t = collectors::procfs::ReadProcessStartTime("/proc", pid);
      if (t.ok()) start = *t;
    }
    if (main_class.empty()) {
      main_class = collectors::MainClassFromJavaCommand(SystemProperty("sun.java.command"));
    }
    r.set_agent_id(collectors::MakeAgentId(host, pid, start).value);
    r.set_host(host);
    r.set_pid(pid);
    if (start != absl::InfinitePast()) proto::ToTimestamp(start, r.mutable_jvm_start_time());
    r.set_main_class(main_class);
    r.set_jvm_version(jvm_version_);
    for (const auto& [k, v] : options_.labels) (*r.mutable_labels())[k] = v;
    r.set_agent_version(HEAPWATCH_AGENT_VERSION);
    r.set_protocol_version(kProtocolVersion);
    return r;
  }

  void DeliverLiveSetPoint(const LiveSetPoint& point) {
    v1::LiveSet live;
    v1::LiveSetPoint* p = live.add_points();
    proto::ToTimestamp(point.time, p->mutable_time());
    p->set_source(static_cast<v1::LiveSetSource>(static_cast<int>(point.source)));
    p->set_live_bytes(point.live_bytes);
    p->set_capacity_bytes(point.capacity_bytes);
    p->set_max_bytes(point.max_bytes);
    session_->Deliver(std::move(live));
  }

  void Fail(uint64_t request_id, const std::string& reason) {
    if (!logged_histogram_failure_) {
      logged_histogram_failure_ = true;
      Log(absl::StrCat("class histogram failed: ", reason));
    }
    v1::AgentMessage m;
    m.mutable_histogram_failed()->set_request_id(request_id);
    m.mutable_histogram_failed()->set_reason(reason.substr(0, 400));
    session_->SendUnsequenced(std::move(m));
  }

  // Takes one histogram in `mode` and delivers it (or reports why not). Returns the pause it
  // caused (zero when the counters could not be read), failed or not.
  absl::Duration TakeHistogram(DiagnosticCommandRunner& dcmd, v1::HistogramMode mode,
                               uint64_t request_id) {
    const bool all = mode != v1::HISTOGRAM_MODE_LIVE;
    StatusOr<collectors::GcCounters> before = collectors::ReadGcCountersFile(perf_path_);
    absl::Time time = absl::Now();
    StatusOr<std::string> text = dcmd.Run(collectors::ClassHistogramCommand(all, java_feature_, 0));
    StatusOr<collectors::GcCounters> after = collectors::ReadGcCountersFile(perf_path_);
    if (after.ok()) {
      // A live histogram's forced full GC is a live-set point, not the application's own reclaim.
      std::optional<LiveSetPoint> point = tracker_.Observe(absl::Now(), *after, /*forced=*/true);
      if (point.has_value()) DeliverLiveSetPoint(*point);
    }
    const absl::Duration pause = before.ok() && after.ok()
                                     ? collectors::SafepointTimeBetween(*before, *after)
                                     : absl::ZeroDuration();
    if (!text.ok()) {
      Fail(request_id, std::string(text.status().message()));
      return pause;
    }
    StatusOr<ClassHistogram> histogram = collectors::ParseClassHistogram(*text);
    if (!histogram.ok()) {
      Fail(request_id, std::string(histogram.status().message()));
      return pause;
    }
    HistogramDelivery d;
    d.time = time;
    d.mode = mode;
    d.pause = pause;
    d.histogram = std::move(*histogram);
    d.request_id = request_id;
    session_->Deliver(std::move(d));
    return pause;
  }

  void DumpFailed(const std::string& dump_id, const std::string& reason) {
    Log(absl::StrCat("extended dump ", dump_id, " failed: ", reason));
    v1::AgentMessage m;
    m.mutable_dump_failed()->set_dump_id(dump_id);
    std::string line = reason.substr(0, 400);
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    m.mutable_dump_failed()->set_reason(line);
    session_->SendUnsequenced(std::move(m));
  }

  // Deletes the dump directories that agents of JVMs which are gone left in `dump_dir` (a JVM
  // killed while its dump was being written or uploaded cannot delete its own):
  // <dump_dir>/heapwatch-agent-<pid>-* owned by this user whose <pid> is not running. A directory
  // of a running process is left alone, even if that pid now names another program.
  static void RemoveStaleDumps(const std::string& dump_dir) {
    DIR* tmp = opendir(dump_dir.c_str());
    if (tmp == nullptr) return;
    constexpr std::string_view kPrefix = "heapwatch-agent-";
    while (dirent* e = readdir(tmp)) {
      std::string_view name = e->d_name;
      if (name.substr(0, kPrefix.size()) != kPrefix) continue;
      std::string_view rest = name.substr(kPrefix.size());
      size_t dash = rest.find('-');
      int64_t pid = 0;
      if (dash == std::string_view::npos ||
          !absl::SimpleAtoi(absl::string_view(rest.data(), dash), &pid) || pid <= 0 ||
          pid == getpid() || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
        continue;
      }
      std::string dir = DumpDirEntry(dump_dir, absl::string_view(name.data(), name.size()));
      struct stat st;
      if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
      for (const char* file : {"/dump.hprof", "/dump.hprof.gz"}) unlink((dir + file).c_str());
      if (rmdir(dir.c_str()) == 0)
        Log(absl::StrCat("deleted ", dir, ", left by a JVM that is gone"));
    }
    closedir(tmp);
  }

  // `name` inside `dump_dir` (which has no trailing '/' unless it is "/").
  static std::string DumpDirEntry(const std::string& dump_dir, absl::string_view name) {
    return absl::StrCat(dump_dir, dump_dir == "/" ? "" : "/", name);
  }

  // Compresses `from` into `to` (gzip, level 1: the dump travels once and is read once).
  static Status GzipFile(const std::string& from, const std::string& to) {
    std::FILE* in = std::fopen(from.c_str(), "rb");
    if (in == nullptr) return absl::UnavailableError(absl::StrCat("open ", from));
    gzFile out = gzopen(to.c_str(), "wb1");
    if (out == nullptr) {
      std::fclose(in);
      return absl::UnavailableError(absl::StrCat("gzopen ", to));
    }
    std::vector<char> buf(1 << 20);
    bool ok = true;
    size_t n;
    while (ok && (n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
      ok = gzwrite(out, buf.data(), static_cast<unsigned>(n)) == static_cast<int>(n);
    }
    ok = ok && !std::ferror(in);
    std::fclose(in);
    ok = gzclose(out) == Z_OK && ok;
    if (!ok) return absl::UnavailableError(absl::StrCat("gzip ", to, " failed (disk full?)"));
    return absl::OkStatus();
  }

  static void RemoveDump(const std::string& dir, const std::string& path) {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }

  // A heap dump (HotSpotDiagnostic, gzip-compressed here when asked) into a new directory only this
  // JVM's user can read (mkdtemp: mode 0700), then DumpReady and a job for the upload thread. The
  // file is deleted on every failure.
  void TakeDump(DiagnosticCommandRunner& dcmd, const v1::DumpRequest& request) {
    const std::string& id = request.dump_id();
    bool printable = !id.empty() && id.size() <= 64;
    for (unsigned char c : id) printable = printable && c >= 0x20 && c < 0x7f;
    if (!printable) return DumpFailed("?", "the dump id must be 1..64 printable ASCII bytes");
    std::string tmpl =
        DumpDirEntry(options_.dump_dir, absl::StrCat("heapwatch-agent-", getpid(), "-XXXXXX"));
    if (mkdtemp(tmpl.data()) == nullptr) {
      return DumpFailed(
          id, absl::StrCat("mkdtemp in ", options_.dump_dir, ": ", std::strerror(errno)));
    }
    UploadJob job;
    job.dump_id = id;
    job.dir = tmpl;
    job.path = tmpl + "/dump.hprof";
    StatusOr<collectors::GcCounters> before = collectors::ReadGcCountersFile(perf_path_);
    Status dumped = dcmd.DumpHeap(job.path, request.live_only());
    StatusOr<collectors::GcCounters> after = collectors::ReadGcCountersFile(perf_path_);
    absl::Duration pause = before.ok() && after.ok()
                               ? collectors::SafepointTimeBetween(*before, *after)
                               : absl::ZeroDuration();
    SpendDump(pause);
    if (dumped.ok() && request.gzip()) {
      std::string raw = job.path;
      job.path += ".gz";
      dumped = GzipFile(raw, job.path);
      unlink(raw.c_str());
    }
    std::string sha256;
    uint64_t size = 0;
    Status digest = dumped.ok() ? DigestFile(job.path, &sha256, &size) : dumped;
    if (!digest.ok() || size == 0) {
      RemoveDump(job.dir, job.path);
      return DumpFailed(id, digest.ok() ? "the heap dump is empty" : std::string(digest.message()));
    }
    job.size = size;
    v1::AgentMessage ready;
    v1::DumpReady* r = ready.mutable_dump_ready();
    r->set_dump_id(id);
    r->set_size_bytes(size);
    r->set_sha256(sha256);
    r->set_gzip(request.gzip());
    proto::ToDuration(pause, r->mutable_pause());
    session_->SendUnsequenced(std::move(ready));
    {
      std::lock_guard<std::mutex> lock(mu_);
      uploads_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

  // The upload thread: each dump is uploaded, resumed after broken calls (up to kUploadAttempts
  // attempts with doubling delays), and deleted once the daemon has it or the upload failed.
  void UploadLoop(Session& session) {
    constexpr int kUploadAttempts = 8;
    while (true) {
      UploadJob job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return shutdown_ || !uploads_.empty(); });
        if (shutdown_) break;
        job = std::move(uploads_.front());
        uploads_.pop_front();
      }
      std::unique_ptr<v1::AgentGateway::Stub> stub = session.NewStub();
      Status s;
      absl::Duration delay = options_.backoff_initial;
      for (int attempt = 0; attempt < kUploadAttempts; ++attempt) {
        s = UploadDumpOnce(*stub, session.token(), session.agent_id(), job.dump_id, job.path,
                           job.size, absl::Minutes(10));
        if (s.ok() || absl::IsDataLoss(s) || absl::IsUnauthenticated(s) ||
            absl::IsPermissionDenied(s) || absl::IsInvalidArgument(s) || absl::IsNotFound(s)) {
          break;
        }
        std::unique_lock<std::mutex> lock(mu_);
        if (cv_.wait_for(lock, absl::ToChronoNanoseconds(delay), [this] { return shutdown_; })) {
          break;
        }
        delay = std::min(delay * 2, options_.backoff_max);
      }
      RemoveDump(job.dir, job.path);
      if (!s.ok()) DumpFailed(job.dump_id, absl::StrCat("upload failed: ", s.message()));
    }
    // Dumps never uploaded are not left behind.
    std::lock_guard<std::mutex> lock(mu_);
    for (const UploadJob& job : uploads_) RemoveDump(job.dir, job.path);
    uploads_.clear();
  }

  void Worker(JNIEnv* jni) {
    RemoveStaleDumps(options_.dump_dir);
    perf_path_ = OwnPerfDataPath();
    jvm_version_ = SystemProperty("java.vm.version");
    if (jvm_version_.empty()) jvm_version_ = SystemProperty("java.version");
    java_feature_ = collectors::JavaFeatureVersion(jvm_version_);
    {
      auto session = std::make_unique<Session>(options_, BuildRegistration(), this);
      std::lock_guard<std::mutex> lock(mu_);
      session_ = std::move(session);
    }
    cv_.notify_all();
    DiagnosticCommandRunner dcmd(jni);
    started_ = absl::Now();
    scheduled_from_ = started_;
    absl::Time last_counters = absl::InfinitePast();
    while (true) {
      std::deque<v1::HistogramRequest> requests;
      std::deque<v1::DumpRequest> dumps;
      v1::AgentConfig config;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, absl::ToChronoNanoseconds(kPoll),
                     [this] { return shutdown_ || !requests_.empty() || !dump_requests_.empty(); });
        if (shutdown_) break;
        requests.swap(requests_);
        dumps.swap(dump_requests_);
        config = config_;
      }
      absl::Time now = absl::Now();
      if (gc_finished_.exchange(false) || now - last_counters >= kCounterInterval) {
        last_counters = now;
        StatusOr<collectors::GcCounters> counters = collectors::ReadGcCountersFile(perf_path_);
        if (counters.ok()) {
          std::optional<LiveSetPoint> point = tracker_.Observe(now, *counters, /*forced=*/false);
          // Remembered, not only seen in this poll: a reclaim shortly before the histogram is due
          // is what the after-GC histogram waits for.
          if (tracker_.natural_old_gc()) natural_gc_at_ = now;
          if (point.has_value()) DeliverLiveSetPoint(*point);
        }
      }
      std::optional<absl::Duration> interval = ProtoDuration(config.histogram_interval());
      UpdateBudget(config, interval);
      for (const v1::DumpRequest& request : dumps) TakeDump(dcmd, request);
      for (const v1::HistogramRequest& request : requests) {
        // Asked for: taken whatever the budget says, and spent from it.
        const v1::HistogramMode mode =
            ModeOrDefault(request.mode() ? request.mode() : config.mode());
        const absl::Time start = absl::Now();
        const absl::Duration pause = TakeHistogram(dcmd, mode, request.request_id());
        Spent(start, proto::FromAgentMode(mode), pause, interval.value_or(absl::ZeroDuration()));
      }
      if (interval.has_value()) Schedule(dcmd, config, *interval);
    }
    ThreadExit();
  }

  // The pause budget follows the pushed configuration (kept across pushes: credit and estimates).
  void UpdateBudget(const v1::AgentConfig& config, std::optional<absl::Duration> interval) {
    std::optional<collectors::PauseBudgetOptions> o =
        interval.has_value() ? BudgetOptionsOf(config, *interval) : std::nullopt;
    if (!o.has_value()) {
      if (budget_.has_value()) {
        budget_.reset();
        Report("", false);
      }
      return;
    }
    if (!budget_.has_value()) {
      budget_.emplace(*o, started_);
      // What was paused before the budget existed (requests, dumps) still counts.
      if (unbudgeted_pause_ > absl::ZeroDuration()) {
        budget_->Spend(started_, HistogramMode::kUnknown, unbudgeted_pause_);
      }
    } else {
      budget_->set_options(*o);
    }
  }

  // Heap sizes for the budget's estimates, from the newest GC counters reading.
  std::pair<uint64_t, uint64_t> HeapSizes() const {
    if (const auto& c = tracker_.last_reading()) return {c->post_gc_used, c->heap_used};
    return {0, 0};
  }

  // Scheduled histograms (docs/agent.md, "Schedule"): the daemon's mode choice for attach agents
  // (collectors/pause_budget.h PauseBudget::Plan) on this JVM thread.
  void Schedule(DiagnosticCommandRunner& dcmd, const v1::AgentConfig& config,
                absl::Duration interval) {
    const absl::Time now = absl::Now();
    const bool natural = config.histogram_after_old_gc() && natural_gc_at_ > last_start_ &&
                         now - natural_gc_at_ <= kNaturalGcFresh;
    const absl::Time due_at = scheduled_from_ + interval;
    // A natural reclaim makes the agent due a little early (as the daemon's scheduler does), so
    // that an application collecting about once per interval gets one histogram per interval.
    const bool due =
        now >= due_at || (natural && now >= scheduled_from_ + interval * kEarlyFraction);
    if (!due || (now < retry_at_ && !natural)) return;
    const absl::Time due_since = std::min(now, due_at);
    collectors::PausePlan plan;
    if (budget_.has_value()) {
      const auto [post, used] = HeapSizes();
      plan = budget_->Plan(now, due_since, interval, natural, post, used);
    } else {
      plan.mode =
          natural ? HistogramMode::kAllAfterGc : proto::FromAgentMode(ModeOrDefault(config.mode()));
    }
    if (!plan.mode.has_value()) {
      retry_at_ = plan.retry_at;
      if (!plan.note.empty()) Report(plan.note, plan.over_budget);
      return;
    }
    HistogramMode mode = *plan.mode;
    if (mode == HistogramMode::kLive && config.mode() == v1::HISTOGRAM_MODE_ALL) {
      mode = HistogramMode::kAll;  // histograms with -all only (collection.all_objects)
    }
    retry_at_ = absl::InfinitePast();
    scheduled_from_ = now;
    const absl::Duration pause = TakeHistogram(dcmd, proto::ToAgentMode(mode), 0);
    Spent(now, mode, pause, interval);
  }

  // Spends a histogram's pause from the budget and reports the budget's state as the daemon does
  // after an attach collection (daemon/daemon.cc Collect).
  void Spent(absl::Time start, HistogramMode mode, absl::Duration pause, absl::Duration interval) {
    last_start_ = start;
    total_pause_ += pause;
    if (!budget_.has_value()) {
      unbudgeted_pause_ += pause;
      Report("", false);
      return;
    }
    budget_->Spend(absl::Now(), mode, pause);
    const auto [post, used] = HeapSizes();
    planned_interval_ = budget_->PlannedInterval(interval, post, used);
    const bool over = budget_->OverBudget(post, used);
    const double percent = budget_->fraction() * 100;
    const std::string planned = absl::FormatDuration(
        absl::Seconds(std::round(absl::ToDoubleSeconds(planned_interval_) * 10) / 10));
    if (over) {
      Report(absl::StrFormat("over budget: even the cheapest histogram every %s exceeds the %.3g%% "
                             "pause budget; collected every %s regardless",
                             planned, percent, planned),
             true);
    } else if (interval > absl::ZeroDuration() && planned_interval_ > interval) {
      Report(absl::StrFormat("interval stretched to %s by the %.3g%% pause budget (last %s "
                             "histogram paused the JVM %s)",
                             planned, percent, std::string(HistogramModeName(mode)),
                             SecondsText(pause)),
             false);
    } else {
      Report("", false);
    }
  }

  // An extended dump's pause counts against the budget's accounting, not its limit.
  void SpendDump(absl::Duration pause) {
    total_pause_ += pause;
    if (budget_.has_value()) {
      budget_->Spend(absl::Now(), HistogramMode::kUnknown, pause);
    } else {
      unbudgeted_pause_ += pause;
    }
    Report(budget_note_, over_budget_);
  }

  // Hands the budget's state to the session (sent on the next Heartbeat, at once if it changed).
  void Report(const std::string& note, bool over_budget) {
    budget_note_ = note;
    over_budget_ = over_budget;
    v1::Heartbeat status;
    status.set_budget_note(note);
    status.set_over_budget(over_budget);
    if (budget_.has_value() && planned_interval_ > absl::ZeroDuration()) {
      proto::ToDuration(planned_interval_, status.mutable_planned_interval());
    }
    proto::ToDuration(total_pause_, status.mutable_total_pause());
    session_->SetBudgetStatus(status);
  }

  jvmtiEnv* const jvmti_;
  const AgentOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Session> session_;           // set once by the JVM thread, guarded by mu_
  v1::AgentConfig config_;                     // guarded by mu_
  std::deque<v1::HistogramRequest> requests_;  // guarded by mu_
  std::deque<v1::DumpRequest> dump_requests_;  // guarded by mu_
  struct UploadJob {
    std::string dump_id, dir, path;
    uint64_t size = 0;
  };
  std::deque<UploadJob> uploads_;  // guarded by mu_
  bool shutdown_ = false;          // guarded by mu_
  int running_ = 0;                // agent threads alive, guarded by mu_
  std::atomic<bool> gc_finished_{false};

  // JVM thread only.
  std::string perf_path_;
  std::string jvm_version_;
  int java_feature_ = 0;
  collectors::LiveSetTracker tracker_;
  std::optional<collectors::PauseBudget> budget_;  // while the configuration gives one
  absl::Time started_ = absl::InfinitePast();
  absl::Time scheduled_from_ = absl::InfinitePast();  // the interval counts from here
  absl::Time last_start_ = absl::InfinitePast();      // start of the last histogram
  absl::Time natural_gc_at_ = absl::InfinitePast();   // the JVM's own last old-gen reclaim
  absl::Time retry_at_ = absl::InfinitePast();        // the budget postponed the histogram
  absl::Duration total_pause_ = absl::ZeroDuration();
  absl::Duration unbudgeted_pause_ = absl::ZeroDuration();  // spent before a budget existed
  absl::Duration planned_interval_ = absl::ZeroDuration();
  std::string budget_note_;
  bool over_budget_ = false;
  bool logged_histogram_failure_ = false;
};

// One agent per JVM. Never deleted: its threads may still be inside gRPC while the process exits.
Agent* g_agent = nullptr;

void JNICALL OnVmInit(jvmtiEnv*, JNIEnv* jni, jthread) {
  if (g_agent == nullptr) return;
  Status s = g_agent->Start(jni);
  if (!s.ok()) Log(absl::StrCat("cannot start: ", s.message()));
}

void JNICALL OnVmDeath(jvmtiEnv*, JNIEnv*) {
  if (g_agent != nullptr) g_agent->OnVmDeath();
}

void JNICALL OnGcFinish(jvmtiEnv*) {
  if (g_agent != nullptr) g_agent->OnGcFinish();
}

// Shared by Agent_OnLoad and Agent_OnAttach: parses the options, sets up JVMTI. Returns the agent
// (not yet started) or nullptr after logging why.
Agent* Setup(JavaVM* vm, const char* options, bool live_phase) {
  if (g_agent != nullptr) {
    Log("already loaded in this JVM; ignoring the second load");
    return nullptr;
  }
  StatusOr<AgentOptions> parsed = ParseAgentOptions(options == nullptr ? "" : options);
  if (!parsed.ok()) {
    Log(absl::StrCat("bad options: ", parsed.status().message(),
                     "; the agent stays inactive, the application runs on"));
    return nullptr;
  }
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2) != JNI_OK ||
      jvmti == nullptr) {
    Log("no JVMTI environment; the agent stays inactive");
    return nullptr;
  }
  jvmtiCapabilities caps;
  std::memset(&caps, 0, sizeof caps);
  caps.can_generate_garbage_collection_events = 1;
  // Without the capability the JVM thread still reads the GC counters every second.
  bool gc_events = jvmti->AddCapabilities(&caps) == JVMTI_ERROR_NONE;
  jvmtiEventCallbacks callbacks;
  std::memset(&callbacks, 0, sizeof callbacks);
  callbacks.VMInit = &OnVmInit;
  callbacks.VMDeath = &OnVmDeath;
  callbacks.GarbageCollectionFinish = &OnGcFinish;
  if (jvmti->SetEventCallbacks(&callbacks, sizeof callbacks) != JVMTI_ERROR_NONE) {
    Log("cannot set JVMTI callbacks; the agent stays inactive");
    return nullptr;
  }
  g_agent = new Agent(jvmti, std::move(*parsed));
  // Process-wide; in a JVM the agent is normally the only user of gRPC's C core (grpc-java is not).
  gpr_set_log_function(&DropGrpcLog);
  if (!live_phase) jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
  if (gc_events) {
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, nullptr);
  }
  return g_agent;
}

}  // namespace
}  // namespace heapwatch::agent

// The only exported symbols (agent/exports.map).
extern "C" {

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
  heapwatch::agent::Setup(vm, options, /*live_phase=*/false);
  return JNI_OK;  // whatever happened: the application runs on
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) {
  heapwatch::agent::Agent* agent = heapwatch::agent::Setup(vm, options, /*live_phase=*/true);
  if (agent == nullptr) return JNI_ERR;  // the loader (heapwatchctl agent load) reports it
  JNIEnv* jni = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  heapwatch::Status s = agent->Start(jni);
  if (!s.ok()) {
    heapwatch::agent::Log(absl::StrCat("cannot start: ", s.message()));
    return JNI_ERR;
  }
  return JNI_OK;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM*) {}

}  // extern "C"
