// The second translation unit of the header-only check: the same headers again, and Boost.JSON's
// library source, which a header-only program compiles in exactly one .cpp.
#include <boost/json/src.hpp>
#include <filesystem>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>

std::size_t journal_lines(std::filesystem::path const& file) { return kernelbrain::read_journal(file).lines; }
