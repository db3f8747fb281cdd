#include "collectors/dumps/class_names.h"

#include <algorithm>

#include "common/stable_class_name.h"

namespace heapwatch::dumps {
namespace {

using analysis::FieldType;
using analysis::ObjectKind;

bool PrimitiveFromDescriptor(char c, FieldType* type, std::string_view* name) {
  switch (c) {
    case 'Z':
      *type = FieldType::kBoolean;
      *name = "boolean";
      return true;
    case 'B':
      *type = FieldType::kByte;
      *name = "byte";
      return true;
    case 'C':
      *type = FieldType::kChar;
      *name = "char";
      return true;
    case 'S':
      *type = FieldType::kShort;
      *name = "short";
      return true;
    case 'I':
      *type = FieldType::kInt;
      *name = "int";
      return true;
    case 'J':
      *type = FieldType::kLong;
      *name = "long";
      return true;
    case 'F':
      *type = FieldType::kFloat;
      *name = "float";
      return true;
    case 'D':
      *type = FieldType::kDouble;
      *name = "double";
      return true;
  }
  return false;
}

bool PrimitiveFromName(std::string_view n, FieldType* type) {
  static constexpr std::pair<std::string_view, FieldType> kNames[] = {
      {"boolean", FieldType::kBoolean}, {"byte", FieldType::kByte},    {"char", FieldType::kChar},
      {"short", FieldType::kShort},     {"int", FieldType::kInt},      {"long", FieldType::kLong},
      {"float", FieldType::kFloat},     {"double", FieldType::kDouble}};
  for (const auto& [name, t] : kNames) {
    if (name == n) {
      *type = t;
      return true;
    }
  }
  return false;
}

// "java/lang/Foo" -> "java.lang.Foo"; a hidden class suffix "+0x..." becomes "/0x..." as the JVM
// prints it.
std::string Dotted(std::string_view internal) {
  std::string out(internal);
  std::replace(out.begin(), out.end(), '/', '.');
  size_t plus = out.rfind("+0x");
  if (plus != std::string::npos) out[plus] = '/';
  return out;
}

}  // namespace

ClassName ParseClassName(std::string_view raw) {
  ClassName out;
  if (!raw.empty() && raw[0] == '[') {
    size_t dims = raw.find_first_not_of('[');
    if (dims == std::string_view::npos) dims = raw.size();
    std::string_view rest = raw.substr(dims);
    std::string_view prim_name;
    FieldType prim;
    if (rest.size() == 1 && PrimitiveFromDescriptor(rest[0], &prim, &prim_name)) {
      out.source_name = std::string(prim_name);
      if (dims == 1) {
        out.kind = ObjectKind::kPrimitiveArray;
        out.element = prim;
      } else {
        out.kind = ObjectKind::kObjectArray;
      }
    } else {
      if (rest.size() >= 2 && rest.front() == 'L' && rest.back() == ';')
        rest = rest.substr(1, rest.size() - 2);
      out.source_name = Dotted(rest);
      out.kind = ObjectKind::kObjectArray;
    }
    for (size_t i = 0; i < dims; ++i) out.source_name += "[]";
    out.source_name = StableClassName(out.source_name);
    return out;
  }
  out.source_name = StableClassName(Dotted(raw));
  if (out.source_name.size() > 2 && out.source_name.ends_with("[]")) {
    std::string_view base = std::string_view(out.source_name).substr(0, out.source_name.size() - 2);
    FieldType prim;
    if (PrimitiveFromName(base, &prim)) {
      out.kind = ObjectKind::kPrimitiveArray;
      out.element = prim;
    } else {
      out.kind = ObjectKind::kObjectArray;
    }
  }
  return out;
}

}  // namespace heapwatch::dumps
