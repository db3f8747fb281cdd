#include "agent/diagnostic_command.h"

#include "absl/strings/str_cat.h"

namespace heapwatch::agent {

DiagnosticCommandRunner::~DiagnosticCommandRunner() {
  if (mbean_ != nullptr) env_->DeleteGlobalRef(mbean_);
  if (hotspot_diagnostic_ != nullptr) env_->DeleteGlobalRef(hotspot_diagnostic_);
}

Status DiagnosticCommandRunner::EnsureInitialized() {
  if (init_failed_) return absl::FailedPreconditionError(init_error_);
  if (mbean_ != nullptr) return absl::OkStatus();
  Status s = Init();  // loads libmanagement_ext
  if (!s.ok()) {
    init_failed_ = true;
    init_error_ = std::string(s.message());
  }
  return s;
}

Status DiagnosticCommandRunner::DumpHeap(const std::string& path, bool live) {
  HW_RETURN_IF_ERROR(EnsureInitialized());
  if (env_->PushLocalFrame(8) != 0) {
    env_->ExceptionClear();
    return absl::ResourceExhaustedError("JNI PushLocalFrame failed");
  }
  Status status = [&]() -> Status {
    if (hotspot_diagnostic_ == nullptr) {
      jclass cls = env_->FindClass("com/sun/management/internal/HotSpotDiagnostic");
      if (cls == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("no com.sun.management.internal.HotSpotDiagnostic: ", TakeException()));
      }
      jmethodID ctor = env_->GetMethodID(cls, "<init>", "()V");
      dump_heap_ = env_->GetMethodID(cls, "dumpHeap0", "(Ljava/lang/String;Z)V");
      if (ctor == nullptr || dump_heap_ == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("no HotSpotDiagnostic.dumpHeap0: ", TakeException()));
      }
      jobject obj = env_->NewObject(cls, ctor);
      if (obj == nullptr || env_->ExceptionCheck()) {
        return absl::FailedPreconditionError(
            absl::StrCat("new HotSpotDiagnostic: ", TakeException()));
      }
      hotspot_diagnostic_ = env_->NewGlobalRef(obj);
    }
    jstring jpath = env_->NewStringUTF(path.c_str());
    if (jpath == nullptr) return absl::ResourceExhaustedError(TakeException());
    env_->CallVoidMethod(hotspot_diagnostic_, dump_heap_, jpath, live ? JNI_TRUE : JNI_FALSE);
    if (env_->ExceptionCheck()) {
      return absl::InternalError(absl::StrCat("heap dump failed: ", TakeException()));
    }
    return absl::OkStatus();
  }();
  env_->PopLocalFrame(nullptr);
  return status;
}

std::string DiagnosticCommandRunner::TakeException() {
  jthrowable t = env_->ExceptionOccurred();
  if (t == nullptr) return "no exception";
  env_->ExceptionClear();
  std::string text = "exception";
  jclass object = env_->FindClass("java/lang/Object");
  jmethodID to_string =
      object ? env_->GetMethodID(object, "toString", "()Ljava/lang/String;") : nullptr;
  if (to_string != nullptr) {
    auto s = static_cast<jstring>(env_->CallObjectMethod(t, to_string));
    if (env_->ExceptionCheck()) {
      env_->ExceptionClear();
    } else if (s != nullptr) {
      const char* chars = env_->GetStringUTFChars(s, nullptr);
      if (chars != nullptr) {
        text = chars;
        env_->ReleaseStringUTFChars(s, chars);
      }
      env_->DeleteLocalRef(s);
    }
  }
  if (object) env_->DeleteLocalRef(object);
  env_->DeleteLocalRef(t);
  if (text.size() > 300) text.resize(300);
  return text;
}

Status DiagnosticCommandRunner::Init() {
  if (env_->PushLocalFrame(16) != 0) {
    env_->ExceptionClear();
    return absl::ResourceExhaustedError("JNI PushLocalFrame failed");
  }
  Status status = [&]() -> Status {
    // Loads libmanagement_ext (the native half of DiagnosticCommandImpl).
    jclass provider = env_->FindClass("com/sun/management/internal/PlatformMBeanProviderImpl");
    if (provider == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no com.sun.management.internal.PlatformMBeanProviderImpl: ", TakeException()));
    }
    // GetStaticFieldID initialises the class (JNI spec), which runs its static initialiser.
    if (env_->GetStaticFieldID(provider, "hsDiagMBean",
                               "Lcom/sun/management/internal/HotSpotDiagnostic;") == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot initialise PlatformMBeanProviderImpl: ", TakeException()));
    }
    jclass impl = env_->FindClass("com/sun/management/internal/DiagnosticCommandImpl");
    if (impl == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("no com.sun.management.internal.DiagnosticCommandImpl: ", TakeException()));
    }
    jmethodID get = env_->GetStaticMethodID(impl, "getDiagnosticCommandMBean",
                                            "()Lcom/sun/management/DiagnosticCommandMBean;");
    if (get == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("no DiagnosticCommandImpl.getDiagnosticCommandMBean: ", TakeException()));
    }
    execute_ = env_->GetMethodID(impl, "executeDiagnosticCommand",
                                 "(Ljava/lang/String;)Ljava/lang/String;");
    if (execute_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("no DiagnosticCommandImpl.executeDiagnosticCommand: ", TakeException()));
    }
    jobject mbean = env_->CallStaticObjectMethod(impl, get);
    if (env_->ExceptionCheck()) {
      return absl::FailedPreconditionError(
          absl::StrCat("getDiagnosticCommandMBean failed: ", TakeException()));
    }
    if (mbean == nullptr) {
      return absl::FailedPreconditionError("the JVM does not support diagnostic commands");
    }
    mbean_ = env_->NewGlobalRef(mbean);
    return absl::OkStatus();
  }();
  env_->PopLocalFrame(nullptr);
  return status;
}

StatusOr<std::string> DiagnosticCommandRunner::Run(const std::string& command) {
  HW_RETURN_IF_ERROR(EnsureInitialized());
  if (env_->PushLocalFrame(8) != 0) {
    env_->ExceptionClear();
    return absl::ResourceExhaustedError("JNI PushLocalFrame failed");
  }
  StatusOr<std::string> result = [&]() -> StatusOr<std::string> {
    jstring line = env_->NewStringUTF(command.c_str());
    if (line == nullptr) return absl::ResourceExhaustedError(TakeException());
    auto out = static_cast<jstring>(env_->CallObjectMethod(mbean_, execute_, line));
    if (env_->ExceptionCheck()) {
      return absl::InternalError(absl::StrCat(command, " failed: ", TakeException()));
    }
    if (out == nullptr) return std::string();
    jsize length = env_->GetStringUTFLength(out);
    // HotSpot's GetStringUTFRegion also writes a terminating NUL: one byte more.
    std::string text(static_cast<size_t>(length) + 1, '\0');
    env_->GetStringUTFRegion(out, 0, env_->GetStringLength(out), text.data());
    text.resize(static_cast<size_t>(length));
    if (env_->ExceptionCheck()) return absl::InternalError(TakeException());
    return text;
  }();
  env_->PopLocalFrame(nullptr);
  return result;
}

}  // namespace heapwatch::agent
