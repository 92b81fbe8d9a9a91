// The reply parser (generate/llm/reply_parser.hpp): extraction of a candidate from a model's reply,
// the recorded repairs, and the typed statuses, including hostile replies.
#include <doctest/doctest.h>

#include <algorithm>
#include <kernelbrain/generate/llm/reply_parser.hpp>
#include <string>
#include <vector>

using namespace kernelbrain;
using namespace kernelbrain::llm;

namespace {

reply_expectations cuda_expect() { return {}; }

reply_expectations host_expect() {
  reply_expectations e;
  e.launch_plan = false;
  e.language = "C++";
  return e;
}

bool has_repair(parsed_reply const& r, std::string const& part) {
  return std::any_of(r.repairs.begin(), r.repairs.end(),
                     [&](std::string const& s) { return s.find(part) != std::string::npos; });
}

const std::string kernel_k =
    "extern \"C\" __global__ void k(const float* x, float* y, long long n) {\n"
    "  long long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i];\n}\n";
const std::string plan_k =
    "{\"launches\": [{\"kernel\": \"k\", \"grid\": [\"ceil_div(N, 256)\", 1, 1], "
    "\"block\": [256, 1, 1], \"args\": [\"x\", \"y\", \"N\"]}]}\n";
const std::string host_src =
    "#include \"kernelbrain/evaluate/host_abi.h\"\n"
    "extern \"C\" void kb_kernel(const kb_args* args) {\n"
    "  args->outputs[0][0] = args->inputs[0][0];\n}\n";

}  // namespace

TEST_CASE("reply parser: a CUDA block and a plan block among prose") {
  const std::string reply = "Here is a faster kernel.\n\n```cuda\n" + kernel_k +
                            "```\n\nAnd the launch plan:\n\n```json\n" + plan_k + "```\nIt coalesces loads.\n";
  const auto r = parse_reply(reply, cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == kernel_k);
  CHECK(r.plan == plan_k);
  CHECK(r.repairs.empty());
  CHECK(r.to_verdict().passed());
}

TEST_CASE("reply parser: blocks are picked by content, not position or label") {
  // The plan first, in an unlabelled block; the source in a ```c++ block; a ~~~ fence; then ```c.
  for (std::string const open : {"```c++", "```cpp", "```c", "```", "~~~", "~~~cuda", "````cuda"}) {
    const std::string close = open.substr(0, open.find_first_not_of(open[0]));
    const std::string reply = "```\n" + plan_k + "```\ntext\n" + open + "\n" + kernel_k + close + "\n";
    const auto r = parse_reply(reply, cuda_expect());
    INFO(open);
    REQUIRE(r.status == reply_status::ok);
    CHECK(r.source == kernel_k);
    CHECK(r.plan == plan_k);
  }
}

TEST_CASE("reply parser: CRLF line endings become LF") {
  std::string reply = "Prose\n```cuda\n" + kernel_k + "```\n```json\n" + plan_k + "```\n";
  std::string crlf;
  for (char c : reply) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  const auto r = parse_reply(crlf, cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == kernel_k);
  CHECK(r.plan == plan_k);
  CHECK(r.source.find('\r') == std::string::npos);
}

TEST_CASE("reply parser: a bare source with no fences, after prose") {
  const auto r = parse_reply("Sure! The kernel is below.\n" + host_src, host_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == host_src);
  CHECK(has_repair(r, "dropped 1 line(s) of prose"));
  const auto bare = parse_reply(host_src, host_expect());
  REQUIRE(bare.status == reply_status::ok);
  CHECK(bare.source == host_src);
  CHECK(bare.repairs.empty());
  // A bare CUDA source with no plan where one is required.
  const auto cu = parse_reply(kernel_k, cuda_expect());
  CHECK(cu.status == reply_status::missing_plan);
  CHECK(cu.source == kernel_k);
  auto no_plan_needed = cuda_expect();
  no_plan_needed.plan_required = false;
  CHECK(parse_reply(kernel_k, no_plan_needed).status == reply_status::ok);
}

TEST_CASE("reply parser: empty replies and prose only are no_code") {
  for (std::string const reply : {"", "\n\n", "I cannot help with that.", "Use `__global__` functions.\nThanks"}) {
    INFO(reply);
    const auto r = parse_reply(reply, cuda_expect());
    CHECK(r.status == reply_status::no_code);
    CHECK(r.source.empty());
    const auto v = r.to_verdict();
    CHECK(v.where == stage::signature);
    CHECK(v.detail.find("reply:") == 0);
  }
  CHECK(parse_reply("just words", host_expect()).status == reply_status::no_code);
  // A block that is code but not the host entry point.
  CHECK(parse_reply("```cpp\nint f() { return 1; }\n```\n", host_expect()).status == reply_status::no_code);
}

TEST_CASE("reply parser: a reply cut off inside a code block is truncated") {
  const std::string reply = "```json\n" + plan_k + "```\n```cuda\n" + kernel_k.substr(0, 60);
  const auto r = parse_reply(reply, cuda_expect());
  CHECK(r.status == reply_status::truncated);
  CHECK(r.source.empty());
  CHECK(r.message.find("line 4") != std::string::npos);
  CHECK(r.to_verdict().where == stage::compile);
  // The complete reply parses.
  CHECK(parse_reply("```json\n" + plan_k + "```\n```cuda\n" + kernel_k + "```\n", cuda_expect()).ok());
}

TEST_CASE("reply parser: a reply over the limit is too_large") {
  auto e = cuda_expect();
  e.max_reply_bytes = 100;
  const std::string reply = "```cuda\n" + kernel_k + "```\n```json\n" + plan_k + "```\n";
  REQUIRE(reply.size() > 100);
  const auto r = parse_reply(reply, e);
  CHECK(r.status == reply_status::too_large);
  CHECK(r.source.empty());
  CHECK(r.to_verdict().where == stage::policy);
  e.max_reply_bytes = reply.size();  // the limit itself is allowed
  CHECK(parse_reply(reply, e).ok());
}

TEST_CASE("reply parser: 10 MB of backticks") {
  const std::string ticks(10u << 20, '`');
  CHECK(parse_reply(ticks, cuda_expect()).status == reply_status::too_large);  // default limit 1 MiB
  auto e = cuda_expect();
  e.max_reply_bytes = 16u << 20;
  CHECK(parse_reply(ticks, e).status == reply_status::no_code);  // one empty, unterminated fence
  std::string lines;
  while (lines.size() < (10u << 20)) lines += "```\n";
  CHECK(parse_reply(lines, e).status == reply_status::no_code);  // a million empty blocks
}

TEST_CASE("reply parser: nested fences") {
  // A longer outer fence holds the inner one (CommonMark).
  const std::string longer = "````markdown\nHere:\n```cuda\n" + kernel_k + "```\n```json\n" + plan_k + "```\n````\n";
  auto r = parse_reply(longer, cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == kernel_k);
  CHECK(r.plan == plan_k);
  // Same-length fences: the inner closing fence closes the outer block; the stray last fence is ignored.
  const std::string same = "```markdown\n```cuda\n" + kernel_k + "```\n```\n";
  auto e = cuda_expect();
  e.plan_required = false;
  r = parse_reply(same, e);
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == kernel_k);
}

TEST_CASE("reply parser: a fence inside a string or in prose is not a fence") {
  const std::string src = "extern \"C\" __global__ void k(char* s) {\n  const char* f = \"```\";\n  s[0] = f[0];\n}\n";
  const std::string reply =
      "Wrap code in ``` fences, like `this`.\n```cuda\n" + src + "```\n```json\n" + plan_k + "```\n";
  const auto r = parse_reply(reply, cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == src);
}

TEST_CASE("reply parser: a JSON block that is not a plan") {
  const std::string reply = "```cuda\n" + kernel_k + "```\n```json\n{\"block\": 256, \"notes\": \"fast\"}\n```\n";
  const auto r = parse_reply(reply, cuda_expect());
  CHECK(r.status == reply_status::missing_plan);
  CHECK(r.plan.empty());
  CHECK(r.source == kernel_k);
  CHECK(r.message.find("not a launch plan") != std::string::npos);
  CHECK(r.to_verdict().where == stage::signature);
  // Only such a block: no code.
  CHECK(parse_reply("```json\n{\"a\": 1}\n```\n", cuda_expect()).status == reply_status::no_code);
  // A plan alone: no code either.
  const auto p = parse_reply("```json\n" + plan_k + "```\n", cuda_expect());
  CHECK(p.status == reply_status::no_code);
  CHECK(p.message.find("launch plan only") != std::string::npos);
}

TEST_CASE("reply parser: missing extern \"C\" is added to each __global__ kernel") {
  const std::string src =
      "#include <cuda_fp16.h>\n#define B 256\n__global__ void __launch_bounds__(256) k(float* y) {\n"
      "  y[threadIdx.x] = 0;\n}\n// __global__ void in_comment(\n"
      "__global__ void helper(float* y) { y[0] = 1; }\n";
  const auto r = parse_reply("```cuda\n" + src + "```\n```json\n" + plan_k + "```\n", cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source.find("#define B 256\nextern \"C\" __global__ void __launch_bounds__(256) k(") != std::string::npos);
  CHECK(r.source.find("extern \"C\" __global__ void helper(") != std::string::npos);
  CHECK(r.source.find("in_comment") != std::string::npos);
  CHECK(r.source.find("extern \"C\" __global__ void in_comment") == std::string::npos);
  CHECK(has_repair(r, "extern \"C\" to __global__ kernel 'k'"));
  CHECK(has_repair(r, "extern \"C\" to __global__ kernel 'helper'"));
  CHECK(r.repairs.size() == 2);
  // Inside an extern "C" { } block, or a template: left alone.
  const std::string in_block =
      "extern \"C\" {\n__global__ void k(float* y) { y[0] = 0; }\n}\n"
      "template <int N> __global__ void t(float* y) { y[0] = N; }\n";
  const auto b = parse_reply("```cuda\n" + in_block + "```\n```json\n" + plan_k + "```\n", cuda_expect());
  REQUIRE(b.status == reply_status::ok);
  CHECK(b.source == in_block);
  CHECK(b.repairs.empty());
}

TEST_CASE("reply parser: one kernel, the plan names another: the plan is renamed") {
  std::string src = kernel_k;
  src.replace(src.find(" k("), 3, " my_copy(");
  const std::string plan = "{\"launches\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1]}]}";
  const auto r = parse_reply("```cuda\n" + src + "```\n```json\n" + plan + "\n```\n", cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == src);
  CHECK(r.plan.find("\"kernel\": \"my_copy\"") != std::string::npos);
  CHECK(r.plan.find("\"kernel\": \"k\"") == std::string::npos);
  CHECK(has_repair(r, "renamed the launch plan's kernel 'k' to 'my_copy'"));
}

TEST_CASE("reply parser: the problem's required entry point renames the function") {
  std::string src = kernel_k;
  src.replace(src.find(" k("), 3, " my_copy(");
  auto e = cuda_expect();
  e.entry_points = {"k"};
  const auto r = parse_reply("```cuda\n" + src + "```\n```json\n" + plan_k + "```\n", e);
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == kernel_k);
  CHECK(r.plan == plan_k);
  CHECK(has_repair(r, "renamed kernel 'my_copy' to 'k'"));
  CHECK(r.repairs.size() == 1);
}

TEST_CASE("reply parser: two kernels, the plan names one of them") {
  const std::string src =
      "__global__ void first(float* y) { y[0] = 1; }\n__global__ void second(float* y) { y[0] = 2; }\n";
  const std::string plan = "{\"launches\": [{\"kernel\": \"second\", \"grid\": [1], \"block\": [1]}]}";
  const auto r = parse_reply("```cuda\n" + src + "```\n```json\n" + plan + "\n```\n", cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.plan.find("\"second\"") != std::string::npos);  // not renamed: the kernel exists
  CHECK_FALSE(has_repair(r, "renamed"));
  CHECK(has_repair(r, "'first'"));
  CHECK(has_repair(r, "'second'"));
}

TEST_CASE("reply parser: several sources: picked by entry point and plan, else ambiguous") {
  const std::string a = "extern \"C\" __global__ void a(float* y) { y[0] = 1; }\n";
  const std::string b = "extern \"C\" __global__ void b(float* y) { y[0] = 2; }\n";
  const std::string plan_b = "{\"launches\": [{\"kernel\": \"b\", \"grid\": [1], \"block\": [1]}]}\n";
  const std::string plan_a = "{\"launches\": [{\"kernel\": \"a\", \"grid\": [1], \"block\": [1]}]}\n";
  auto r = parse_reply("```cuda\n" + a + "```\n```cuda\n" + b + "```\n```json\n" + plan_b + "```\n", cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == b);
  auto e = cuda_expect();
  e.entry_points = {"a"};
  r = parse_reply("```cuda\n" + a + "```\n```cuda\n" + b + "```\n```json\n" + plan_a + "```\n", e);
  REQUIRE(r.status == reply_status::ok);
  CHECK(r.source == a);
  const std::string plan_c = "{\"launches\": [{\"kernel\": \"c\", \"grid\": [1], \"block\": [1]}]}\n";
  r = parse_reply("```cuda\n" + a + "```\n```cuda\n" + b + "```\n```json\n" + plan_c + "```\n", cuda_expect());
  CHECK(r.status == reply_status::ambiguous);
  CHECK(r.source.empty());
  CHECK(r.to_verdict().where == stage::signature);
  // The same block twice is not ambiguous.
  r = parse_reply("```cuda\n" + a + "```\n```cuda\n" + a + "```\n```json\n" + plan_a + "```\n", cuda_expect());
  CHECK(r.status == reply_status::ok);
  // Two different plans are.
  r = parse_reply("```cuda\n" + a + "```\n```json\n" + plan_a + "```\n```json\n" + plan_b + "```\n", cuda_expect());
  CHECK(r.status == reply_status::ambiguous);
  // Host: two different definitions of kb_kernel.
  std::string other = host_src;
  other.replace(other.find("[0][0] = args"), 13, "[0][0] = 2 + args");
  CHECK(parse_reply("```cpp\n" + host_src + "```\n```cpp\n" + other + "```\n", host_expect()).status ==
        reply_status::ambiguous);
}

TEST_CASE("reply parser: trailing commas and comments in the plan are removed") {
  const std::string plan =
      "{\n  // one launch\n  \"launches\": [\n    {\"kernel\": \"k\", /* 1-D */ \"grid\": [1, 1, 1,],\n"
      "     \"block\": [\"256 // not a comment\", 1, 1],},\n  ],\n}\n";
  const auto r = parse_reply("```cuda\n" + kernel_k + "```\n```jsonc\n" + plan + "```\n", cuda_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(has_repair(r, "removed comments"));
  CHECK(has_repair(r, "removed trailing commas"));
  CHECK(r.plan.find("one launch") == std::string::npos);
  CHECK(r.plan.find("1-D") == std::string::npos);
  CHECK(r.plan.find("\"256 // not a comment\"") != std::string::npos);
  CHECK(r.plan.find("1,]") == std::string::npos);
  CHECK(r.plan.find("},") == std::string::npos);
  std::string compact;
  for (char c : r.plan)
    if (c != ' ' && c != '\n') compact += c;
  CHECK(compact == "{\"launches\":[{\"kernel\":\"k\",\"grid\":[1,1,1],\"block\":[\"256//notacomment\",1,1]}]}");
}

TEST_CASE("reply parser: host sources get the standard includes they use") {
  const std::string src =
      "extern \"C\" void kb_kernel(const kb_args* args) {\n  std::int64_t n = args->dims[0];\n"
      "  std::memcpy(args->outputs[0], args->inputs[0], sizeof(float) * n);\n"
      "  // std::vector in a comment does not count\n}\n";
  const auto r = parse_reply("```cpp\n" + src + "```\n", host_expect());
  REQUIRE(r.status == reply_status::ok);
  CHECK(has_repair(r, "host_abi.h"));
  CHECK(has_repair(r, "<cstdint>"));
  CHECK(has_repair(r, "<cstring>"));
  CHECK_FALSE(has_repair(r, "<vector>"));
  CHECK(r.repairs.size() == 3);
  CHECK(r.source.find("#include <cstdint>\n") != std::string::npos);
  CHECK(r.source.find("#include <cstring>\n") != std::string::npos);
  CHECK(r.source.find("#include \"kernelbrain/evaluate/host_abi.h\"\n") == 0);
  CHECK(r.source.substr(r.source.size() - src.size()) == src);
  CHECK(r.plan.empty());
  // Already included: nothing added.
  const auto ok = parse_reply("```cpp\n#include <cstdint>\n#include <cstring>\n" + host_src + "```\n", host_expect());
  CHECK(ok.repairs.empty());
}

TEST_CASE("reply parser: blocks in non-code languages are not sources") {
  const std::string reply = "```python\n# __global__ void k(\n```\n```bash\nnvcc k.cu\n```\n";
  CHECK(parse_reply(reply, cuda_expect()).status == reply_status::no_code);
}

TEST_CASE("reply parser: status names") {
  CHECK(to_string(reply_status::ok) == "ok");
  CHECK(to_string(reply_status::no_code) == "no_code");
  CHECK(to_string(reply_status::truncated) == "truncated");
  CHECK(to_string(reply_status::too_large) == "too_large");
  CHECK(to_string(reply_status::ambiguous) == "ambiguous");
  CHECK(to_string(reply_status::missing_plan) == "missing_plan");
}
