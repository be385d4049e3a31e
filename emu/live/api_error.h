#pragma once
// A request the server refuses, with its HTTP status and the fields of OpenAI's error body:
// {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace nvl::emu::live {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  nlohmann::json body() const {
    nlohmann::json e = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
    if (!param_.empty()) e["param"] = param_;
    if (!code_.empty()) e["code"] = code_;
    return {{"error", e}};
  }

  static ApiError bad_request(std::string message, std::string param = "") {
    return ApiError(400, std::move(message), "invalid_request_error", std::move(param));
  }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

}  // namespace nvl::emu::live
