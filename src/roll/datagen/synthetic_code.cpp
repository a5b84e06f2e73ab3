// `roll data code`: Python function tasks with assert test cases. Each template knows its prompt,
// a reference solution and how to compute the expected value of a call in C++, so the test cases
// never come from running the solution (tests run the solution through the code reward to check
// the two agree).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <set>
#include <utility>

#include "roll/core/rng.h"
#include "roll/core/error.h"
#include "roll/datagen/synthetic_data.h"

namespace roll::pipeline {
namespace {

using Ints = std::vector<int64_t>;

// Python literals.
std::string py_int(int64_t v) { return std::to_string(v); }
std::string py_bool(bool v) { return v ? "True" : "False"; }
std::string py_str(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}
std::string py_ints(const Ints& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + py_int(xs[i]);
  return out + "]";
}
std::string py_strs(const std::vector<std::string>& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + py_str(xs[i]);
  return out + "]";
}

// Random inputs (inclusive bounds).
int64_t rand_int(SeededRng& rng, int64_t lo, int64_t hi) { return rng.range(lo, hi + 1); }
Ints rand_ints(SeededRng& rng, int64_t min_len, int64_t max_len, int64_t lo, int64_t hi) {
  Ints xs(static_cast<size_t>(rand_int(rng, min_len, max_len)));
  for (auto& x : xs) x = rand_int(rng, lo, hi);
  return xs;
}
std::string rand_word(SeededRng& rng, int64_t min_len, int64_t max_len) {
  std::string w(static_cast<size_t>(rand_int(rng, min_len, max_len)), 'a');
  for (auto& c : w) c = static_cast<char>('a' + rng.below(26));
  return w;
}
std::string rand_sentence(SeededRng& rng, int64_t min_words, int64_t max_words) {
  const int64_t n = rand_int(rng, min_words, max_words);
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += (i ? " " : "") + rand_word(rng, 1, 7);
  return s;
}
std::string reversed(std::string s) {
  std::reverse(s.begin(), s.end());
  return s;
}
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t b = s.find_first_not_of(' ', pos);
    if (b == std::string::npos) break;
    const size_t e = std::min(s.find(' ', b), s.size());
    out.push_back(s.substr(b, e - b));
    pos = e;
  }
  return out;
}
int64_t gcd(int64_t a, int64_t b) {
  while (b) a = std::exchange(b, a % b);
  return a;
}

struct Case {
  std::string args;      // the call's arguments as Python source
  std::string expected;  // the result as a Python literal
};

// One task with its parameters drawn: the text after "Write a Python function `f(args)` that",
// the reference solution, and a generator of cases.
struct Instance {
  std::string params;       // "xs" or "a, b"
  std::string description;  // "returns ..."
  std::string solution;     // with {fn} for the function name
  std::function<Case(SeededRng&)> make_case;
};

struct Task {
  const char* family;
  std::vector<const char*> names;  // function names; the prompt uses one
  std::function<Instance(SeededRng&)> instantiate;
};

Instance fixed(std::string params, std::string description, std::string solution, std::function<Case(SeededRng&)> make) {
  return {std::move(params), std::move(description), std::move(solution), std::move(make)};
}

const std::vector<Task>& tasks() {
  static const std::vector<Task> table = {
      {"reverse_string", {"reverse_string", "reverse_text"}, [](SeededRng&) {
         return fixed("s", "returns the string s reversed", "def {fn}(s):\n    return s[::-1]\n", [](SeededRng& r) {
           const std::string s = rand_word(r, 0, 10);
           return Case{py_str(s), py_str(reversed(s))};
         });
       }},
      {"sum_list", {"sum_list", "list_sum"}, [](SeededRng&) {
         return fixed("xs", "returns the sum of the integers in the list xs (0 for an empty list)",
                      "def {fn}(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 8, -50, 50);
                        int64_t s = 0;
                        for (auto x : xs) s += x;
                        return Case{py_ints(xs), py_int(s)};
                      });
       }},
      {"fizzbuzz", {"fizzbuzz", "fizz_buzz"}, [](SeededRng& p) {
         static const char* const kWords[] = {"Fizz", "Buzz", "Bang", "Pop", "Zap", "Boom"};
         const int64_t a = rand_int(p, 2, 7);
         int64_t b = rand_int(p, 2, 7);
         while (b == a) b = rand_int(p, 2, 7);
         const std::string wa = kWords[p.below(6)];
         std::string wb = kWords[p.below(6)];
         while (wb == wa) wb = kWords[p.below(6)];
         return fixed(
             "n",
             fmt::format("returns a list of strings for the numbers 1 to n: '{0}{1}' for numbers divisible by both {2} "
                         "and {3}, '{0}' for numbers divisible by {2} only, '{1}' for numbers divisible by {3} only, "
                         "and the number itself as a string otherwise",
                         wa, wb, a, b),
             fmt::format("def {{fn}}(n):\n    out = []\n    for i in range(1, n + 1):\n"
                         "        if i % {2} == 0 and i % {3} == 0:\n            out.append('{0}{1}')\n"
                         "        elif i % {2} == 0:\n            out.append('{0}')\n"
                         "        elif i % {3} == 0:\n            out.append('{1}')\n"
                         "        else:\n            out.append(str(i))\n    return out\n",
                         wa, wb, a, b),
             [=](SeededRng& r) {
               const int64_t n = rand_int(r, 0, 20);
               std::vector<std::string> out;
               for (int64_t i = 1; i <= n; ++i)
                 out.push_back(i % a == 0 && i % b == 0 ? wa + wb : i % a == 0 ? wa : i % b == 0 ? wb : std::to_string(i));
               return Case{py_int(n), py_strs(out)};
             });
       }},
      {"gcd", {"gcd", "greatest_common_divisor"}, [](SeededRng&) {
         return fixed("a, b", "returns the greatest common divisor of the positive integers a and b",
                      "def {fn}(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n", [](SeededRng& r) {
                        const int64_t a = rand_int(r, 1, 300), b = rand_int(r, 1, 300);
                        return Case{fmt::format("{}, {}", a, b), py_int(gcd(a, b))};
                      });
       }},
      {"lcm", {"lcm", "least_common_multiple"}, [](SeededRng&) {
         return fixed("a, b", "returns the least common multiple of the positive integers a and b",
                      "def {fn}(a, b):\n    x, y = a, b\n    while y:\n        x, y = y, x % y\n    return a * b // x\n",
                      [](SeededRng& r) {
                        const int64_t a = rand_int(r, 1, 60), b = rand_int(r, 1, 60);
                        return Case{fmt::format("{}, {}", a, b), py_int(a / gcd(a, b) * b)};
                      });
       }},
      {"is_prime", {"is_prime", "check_prime"}, [](SeededRng&) {
         return fixed("n", "returns True if the integer n is a prime number and False otherwise",
                      "def {fn}(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
                      "        if n % i == 0:\n            return False\n        i += 1\n    return True\n",
                      [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 200);
                        bool prime = n >= 2;
                        for (int64_t i = 2; i * i <= n && prime; ++i) prime = n % i != 0;
                        return Case{py_int(n), py_bool(prime)};
                      });
       }},
      {"factorial", {"factorial", "fact"}, [](SeededRng&) {
         return fixed("n", "returns n! (the product 1 * 2 * ... * n, with 0! = 1) for an integer n >= 0",
                      "def {fn}(n):\n    out = 1\n    for i in range(2, n + 1):\n        out *= i\n    return out\n",
                      [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 15);
                        int64_t f = 1;
                        for (int64_t i = 2; i <= n; ++i) f *= i;
                        return Case{py_int(n), py_int(f)};
                      });
       }},
      {"fibonacci", {"fibonacci", "fib"}, [](SeededRng&) {
         return fixed("n", "returns the n-th Fibonacci number F(n), where F(0) = 0, F(1) = 1 and F(n) = F(n-1) + F(n-2)",
                      "def {fn}(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
                      [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 40);
                        int64_t a = 0, b = 1;
                        for (int64_t i = 0; i < n; ++i) a = std::exchange(b, a + b);
                        return Case{py_int(n), py_int(a)};
                      });
       }},
      {"count_vowels", {"count_vowels", "vowel_count"}, [](SeededRng&) {
         return fixed("s", "returns how many characters of the lowercase string s are vowels (a, e, i, o, u)",
                      "def {fn}(s):\n    return sum(1 for c in s if c in 'aeiou')\n", [](SeededRng& r) {
                        const std::string s = rand_sentence(r, 0, 4);
                        const auto n = std::count_if(s.begin(), s.end(), [](char c) {
                          return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
                        });
                        return Case{py_str(s), py_int(n)};
                      });
       }},
      {"is_palindrome", {"is_palindrome", "palindrome_check"}, [](SeededRng&) {
         return fixed("s", "returns True if the string s reads the same forwards and backwards, else False",
                      "def {fn}(s):\n    return s == s[::-1]\n", [](SeededRng& r) {
                        std::string s = rand_word(r, 0, 5);
                        const uint64_t kind = r.below(3);
                        if (kind == 0) s += reversed(s);
                        else if (kind == 1) s += rand_word(r, 1, 1) + reversed(s);
                        return Case{py_str(s), py_bool(s == reversed(s))};
                      });
       }},
      {"max_of_list", {"max_of_list", "largest"}, [](SeededRng&) {
         return fixed("xs", "returns the largest integer in the non-empty list xs",
                      "def {fn}(xs):\n    best = xs[0]\n    for x in xs:\n        if x > best:\n            best = x\n"
                      "    return best\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 1, 8, -100, 100);
                        return Case{py_ints(xs), py_int(*std::max_element(xs.begin(), xs.end()))};
                      });
       }},
      {"min_of_list", {"min_of_list", "smallest"}, [](SeededRng&) {
         return fixed("xs", "returns the smallest integer in the non-empty list xs",
                      "def {fn}(xs):\n    best = xs[0]\n    for x in xs:\n        if x < best:\n            best = x\n"
                      "    return best\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 1, 8, -100, 100);
                        return Case{py_ints(xs), py_int(*std::min_element(xs.begin(), xs.end()))};
                      });
       }},
      {"count_occurrences", {"count_occurrences", "count_value"}, [](SeededRng&) {
         return fixed("xs, x", "returns how many times the integer x appears in the list xs",
                      "def {fn}(xs, x):\n    return sum(1 for v in xs if v == x)\n", [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 10, 0, 5);
                        const int64_t x = rand_int(r, 0, 5);
                        return Case{fmt::format("{}, {}", py_ints(xs), x), py_int(std::count(xs.begin(), xs.end(), x))};
                      });
       }},
      {"sum_digits", {"sum_digits", "digit_sum"}, [](SeededRng&) {
         return fixed("n", "returns the sum of the decimal digits of the non-negative integer n",
                      "def {fn}(n):\n    return sum(int(c) for c in str(n))\n", [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 1000000);
                        int64_t s = 0;
                        for (int64_t m = n; m; m /= 10) s += m % 10;
                        return Case{py_int(n), py_int(s)};
                      });
       }},
      {"reverse_words", {"reverse_words", "words_backwards"}, [](SeededRng&) {
         return fixed("s", "returns the words of s (separated by single spaces) in reverse order, joined by single spaces",
                      "def {fn}(s):\n    return ' '.join(s.split(' ')[::-1])\n", [](SeededRng& r) {
                        const std::string s = rand_sentence(r, 1, 6);
                        auto w = words_of(s);
                        std::reverse(w.begin(), w.end());
                        std::string out;
                        for (size_t i = 0; i < w.size(); ++i) out += (i ? " " : "") + w[i];
                        return Case{py_str(s), py_str(out)};
                      });
       }},
      {"sum_multiples", {"sum_multiples", "multiples_sum"}, [](SeededRng& p) {
         const int64_t k = rand_int(p, 2, 9);
         return fixed("n", fmt::format("returns the sum of all positive multiples of {} that are less than n", k),
                      fmt::format("def {{fn}}(n):\n    return sum(i for i in range({0}, n, {0}))\n", k), [=](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 150);
                        int64_t s = 0;
                        for (int64_t i = k; i < n; i += k) s += i;
                        return Case{py_int(n), py_int(s)};
                      });
       }},
      {"count_divisible", {"count_divisible", "divisible_count"}, [](SeededRng& p) {
         const int64_t k = rand_int(p, 2, 7);
         return fixed("xs", fmt::format("returns how many integers in the list xs are divisible by {}", k),
                      fmt::format("def {{fn}}(xs):\n    return sum(1 for x in xs if x % {} == 0)\n", k), [=](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 10, -30, 30);
                        return Case{py_ints(xs),
                                    py_int(std::count_if(xs.begin(), xs.end(), [=](int64_t x) { return x % k == 0; }))};
                      });
       }},
      {"filter_greater", {"filter_greater", "keep_above"}, [](SeededRng& p) {
         const int64_t t = rand_int(p, -5, 10);
         return fixed("xs", fmt::format("returns a list of the integers in xs that are greater than {}, in their original order", t),
                      fmt::format("def {{fn}}(xs):\n    return [x for x in xs if x > {}]\n", t), [=](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 9, -20, 20);
                        Ints out;
                        std::copy_if(xs.begin(), xs.end(), std::back_inserter(out), [=](int64_t x) { return x > t; });
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"square_all", {"square_all", "squares"}, [](SeededRng&) {
         return fixed("xs", "returns a list with the square of each integer in xs, in order",
                      "def {fn}(xs):\n    return [x * x for x in xs]\n", [](SeededRng& r) {
                        Ints xs = rand_ints(r, 0, 8, -30, 30), out;
                        for (auto x : xs) out.push_back(x * x);
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"running_sum", {"running_sum", "prefix_sums"}, [](SeededRng&) {
         return fixed("xs", "returns the list of running totals of xs: element i is the sum of xs[0] through xs[i]",
                      "def {fn}(xs):\n    out = []\n    total = 0\n    for x in xs:\n        total += x\n"
                      "        out.append(total)\n    return out\n",
                      [](SeededRng& r) {
                        Ints xs = rand_ints(r, 0, 8, -20, 20), out;
                        int64_t s = 0;
                        for (auto x : xs) out.push_back(s += x);
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"rotate_left", {"rotate_left", "left_rotate"}, [](SeededRng&) {
         return fixed("xs, k",
                      "returns the list xs rotated left by k positions (k >= 0 may exceed the length of xs; an empty "
                      "list stays empty)",
                      "def {fn}(xs, k):\n    if not xs:\n        return []\n    k %= len(xs)\n    return xs[k:] + xs[:k]\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 7, 0, 9);
                        const int64_t k = rand_int(r, 0, 10);
                        Ints out = xs;
                        if (!out.empty()) std::rotate(out.begin(), out.begin() + k % static_cast<int64_t>(out.size()), out.end());
                        return Case{fmt::format("{}, {}", py_ints(xs), k), py_ints(out)};
                      });
       }},
      {"remove_duplicates", {"remove_duplicates", "dedupe"}, [](SeededRng&) {
         return fixed("xs", "returns the integers of xs without repeats, keeping the first occurrence of each, in order",
                      "def {fn}(xs):\n    seen = set()\n    out = []\n    for x in xs:\n        if x not in seen:\n"
                      "            seen.add(x)\n            out.append(x)\n    return out\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 10, 0, 6);
                        Ints out;
                        for (auto x : xs)
                          if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"second_largest", {"second_largest", "runner_up"}, [](SeededRng&) {
         return fixed("xs", "returns the second largest distinct value in the list xs, or None if xs has fewer than two "
                      "distinct values",
                      "def {fn}(xs):\n    values = sorted(set(xs), reverse=True)\n"
                      "    return values[1] if len(values) > 1 else None\n",
                      [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 7, 0, 9);
                        const std::set<int64_t> distinct(xs.begin(), xs.end());
                        return Case{py_ints(xs), distinct.size() > 1 ? py_int(*std::next(distinct.rbegin())) : "None"};
                      });
       }},
      {"to_binary", {"to_binary", "binary_string"}, [](SeededRng&) {
         return fixed("n", "returns the binary representation of the non-negative integer n as a string of 0s and 1s "
                      "without a prefix (0 gives '0')",
                      "def {fn}(n):\n    return bin(n)[2:]\n", [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 1000);
                        std::string bits;
                        for (int64_t m = n; m; m /= 2) bits.insert(bits.begin(), static_cast<char>('0' + m % 2));
                        return Case{py_int(n), py_str(bits.empty() ? "0" : bits)};
                      });
       }},
      {"count_digits", {"count_digits", "num_digits"}, [](SeededRng&) {
         return fixed("n", "returns the number of decimal digits of the non-negative integer n (0 has one digit)",
                      "def {fn}(n):\n    return len(str(n))\n", [](SeededRng& r) {
                        const int64_t digits = rand_int(r, 1, 12);
                        int64_t lo = 1;
                        for (int64_t i = 1; i < digits; ++i) lo *= 10;
                        const int64_t n = digits == 1 ? rand_int(r, 0, 9) : rand_int(r, lo, lo * 10 - 1);
                        return Case{py_int(n), py_int(digits)};
                      });
       }},
      {"power_mod", {"power_mod", "mod_pow"}, [](SeededRng&) {
         return fixed("a, b, m", "returns a to the power b, modulo m, for integers a >= 0, b >= 0 and m >= 1",
                      "def {fn}(a, b, m):\n    return pow(a, b, m)\n", [](SeededRng& r) {
                        const int64_t a = rand_int(r, 0, 100), b = rand_int(r, 0, 50), m = rand_int(r, 1, 97);
                        int64_t result = 1 % m, base = a % m;
                        for (int64_t e = b; e; e /= 2, base = base * base % m)
                          if (e % 2) result = result * base % m;
                        return Case{fmt::format("{}, {}, {}", a, b, m), py_int(result)};
                      });
       }},
      {"triangle_number", {"triangle_number", "triangular"}, [](SeededRng&) {
         return fixed("n", "returns the sum of the integers from 1 to n (0 for n = 0)",
                      "def {fn}(n):\n    return n * (n + 1) // 2\n", [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 1000);
                        return Case{py_int(n), py_int(n * (n + 1) / 2)};
                      });
       }},
      {"collatz_steps", {"collatz_steps", "collatz_length"}, [](SeededRng&) {
         return fixed("n", "returns how many steps the Collatz process takes to reach 1 from the positive integer n "
                      "(an even x becomes x // 2, an odd x becomes 3 * x + 1; n = 1 takes 0 steps)",
                      "def {fn}(n):\n    steps = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n"
                      "        steps += 1\n    return steps\n",
                      [](SeededRng& r) {
                        const int64_t n = rand_int(r, 1, 100);
                        int64_t steps = 0;
                        for (int64_t x = n; x != 1; ++steps) x = x % 2 == 0 ? x / 2 : 3 * x + 1;
                        return Case{py_int(n), py_int(steps)};
                      });
       }},
      {"caesar_shift", {"caesar_shift", "shift_letters"}, [](SeededRng& p) {
         const int64_t k = rand_int(p, 1, 25);
         return fixed("s", fmt::format("returns s with every lowercase letter moved {} places forward in the alphabet "
                                       "(wrapping around from z to a); other characters stay as they are", k),
                      fmt::format("def {{fn}}(s):\n    return ''.join(chr((ord(c) - 97 + {}) % 26 + 97) if 'a' <= c <= "
                                  "'z' else c for c in s)\n", k),
                      [=](SeededRng& r) {
                        const std::string s = rand_sentence(r, 0, 4);
                        std::string out = s;
                        for (auto& c : out)
                          if (c >= 'a' && c <= 'z') c = static_cast<char>('a' + (c - 'a' + k) % 26);
                        return Case{py_str(s), py_str(out)};
                      });
       }},
      {"count_words", {"count_words", "word_count"}, [](SeededRng&) {
         return fixed("s", "returns the number of words in s, where words are separated by whitespace",
                      "def {fn}(s):\n    return len(s.split())\n", [](SeededRng& r) {
                        const std::string s = rand_sentence(r, 0, 7);
                        return Case{py_str(s), py_int(static_cast<int64_t>(words_of(s).size()))};
                      });
       }},
      {"longest_word", {"longest_word", "first_longest_word"}, [](SeededRng&) {
         return fixed("s", "returns the longest word of s (words are separated by single spaces); when several words "
                      "are equally long, the first of them",
                      "def {fn}(s):\n    best = ''\n    for w in s.split(' '):\n        if len(w) > len(best):\n"
                      "            best = w\n    return best\n",
                      [](SeededRng& r) {
                        const std::string s = rand_sentence(r, 1, 6);
                        std::string best;
                        for (const auto& w : words_of(s))
                          if (w.size() > best.size()) best = w;
                        return Case{py_str(s), py_str(best)};
                      });
       }},
      {"merge_sorted", {"merge_sorted", "merge_lists"}, [](SeededRng&) {
         return fixed("a, b", "merges the two sorted lists of integers a and b into one sorted list and returns it",
                      "def {fn}(a, b):\n    out = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n"
                      "        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n"
                      "            out.append(b[j])\n            j += 1\n    return out + a[i:] + b[j:]\n",
                      [](SeededRng& r) {
                        Ints a = rand_ints(r, 0, 6, -20, 20), b = rand_ints(r, 0, 6, -20, 20);
                        std::sort(a.begin(), a.end());
                        std::sort(b.begin(), b.end());
                        Ints out;
                        std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
                        return Case{fmt::format("{}, {}", py_ints(a), py_ints(b)), py_ints(out)};
                      });
       }},
      {"clamp_all", {"clamp_all", "clip_values"}, [](SeededRng& p) {
         const int64_t lo = rand_int(p, -5, 0), hi = rand_int(p, 1, 8);
         return fixed("xs", fmt::format("returns a list in which each integer of xs is limited to the range {0} to {1} "
                                        "(smaller values become {0}, larger ones {1})", lo, hi),
                      fmt::format("def {{fn}}(xs):\n    return [min(max(x, {}), {}) for x in xs]\n", lo, hi),
                      [=](SeededRng& r) {
                        Ints xs = rand_ints(r, 0, 8, -10, 12), out;
                        for (auto x : xs) out.push_back(std::clamp(x, lo, hi));
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"product", {"product_of_list", "list_product"}, [](SeededRng&) {
         return fixed("xs", "returns the product of the integers in xs (1 for an empty list)",
                      "def {fn}(xs):\n    out = 1\n    for x in xs:\n        out *= x\n    return out\n", [](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 6, -5, 5);
                        int64_t out = 1;
                        for (auto x : xs) out *= x;
                        return Case{py_ints(xs), py_int(out)};
                      });
       }},
      {"dot_product", {"dot_product", "dot"}, [](SeededRng&) {
         return fixed("a, b", "returns the dot product of two lists of integers a and b of the same length",
                      "def {fn}(a, b):\n    return sum(x * y for x, y in zip(a, b))\n", [](SeededRng& r) {
                        const int64_t n = rand_int(r, 0, 6);
                        const Ints a = rand_ints(r, n, n, -10, 10), b = rand_ints(r, n, n, -10, 10);
                        int64_t s = 0;
                        for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
                        return Case{fmt::format("{}, {}", py_ints(a), py_ints(b)), py_int(s)};
                      });
       }},
      {"chunk_sums", {"chunk_sums", "group_sums"}, [](SeededRng& p) {
         const int64_t k = rand_int(p, 2, 4);
         return fixed("xs", fmt::format("splits xs into consecutive groups of {} elements (the last group may be "
                                        "shorter) and returns the list of the sums of the groups", k),
                      fmt::format("def {{fn}}(xs):\n    return [sum(xs[i:i + {0}]) for i in range(0, len(xs), {0})]\n", k),
                      [=](SeededRng& r) {
                        const Ints xs = rand_ints(r, 0, 10, -9, 9);
                        Ints out;
                        for (size_t i = 0; i < xs.size(); i += static_cast<size_t>(k)) {
                          int64_t s = 0;
                          for (size_t j = i; j < std::min(xs.size(), i + static_cast<size_t>(k)); ++j) s += xs[j];
                          out.push_back(s);
                        }
                        return Case{py_ints(xs), py_ints(out)};
                      });
       }},
      {"is_sorted", {"is_sorted", "is_non_decreasing"}, [](SeededRng&) {
         return fixed("xs", "returns True if the integers of xs are in non-decreasing order, else False",
                      "def {fn}(xs):\n    return all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1))\n",
                      [](SeededRng& r) {
                        Ints xs = rand_ints(r, 0, 7, 0, 20);
                        if (r.below(2)) std::sort(xs.begin(), xs.end());
                        return Case{py_ints(xs), py_bool(std::is_sorted(xs.begin(), xs.end()))};
                      });
       }},
      {"count_char", {"count_char", "letter_count"}, [](SeededRng& p) {
         const char c = static_cast<char>('a' + p.below(26));
         return fixed("s", fmt::format("returns how many times the letter '{}' occurs in the string s", c),
                      fmt::format("def {{fn}}(s):\n    return s.count('{}')\n", c), [=](SeededRng& r) {
                        std::string s = rand_sentence(r, 0, 4);
                        // Plant the letter now and then so that counts are not mostly 0.
                        for (auto& ch : s)
                          if (ch != ' ' && r.below(6) == 0) ch = c;
                        return Case{py_str(s), py_int(std::count(s.begin(), s.end(), c))};
                      });
       }},
  };
  return table;
}

constexpr int kCasesPerRow = 5;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int code_task_count() { return static_cast<int>(tasks().size()); }

std::vector<nlohmann::ordered_json> code_rows(const SyntheticDataOptions& o) {
  check_synthetic_options(o);
  SeededRng rng(o.seed);
  std::vector<nlohmann::ordered_json> rows;
  const int64_t max_draws = 100 * o.n + 10000;
  for (int64_t draw = 0; static_cast<int64_t>(rows.size()) < o.n; ++draw) {
    if (draw >= max_draws)
      throw Error(fmt::format("only {} {} code rows were found in {} draws", rows.size(), o.split, max_draws));
    const Task& task = tasks()[rng.below(tasks().size())];
    const std::string fn = task.names[rng.below(task.names.size())];
    Instance inst = task.instantiate(rng);
    // Openers and names give even parameterless templates several prompts, so that most templates
    // have prompts in both splits.
    static const char* const kOpeners[] = {"Write", "Implement", "Define"};
    const std::string prompt =
        fmt::format("{} a Python function `{}({})` that {}. Return only the function, in a ```python code block.",
                    kOpeners[rng.below(3)], fn, inst.params, inst.description);
    if (split_of(prompt) != o.split) continue;
    std::string asserts;
    for (int i = 0; i < kCasesPerRow; ++i) {
      const Case c = inst.make_case(rng);
      asserts += fmt::format("assert {}({}) == {}\n", fn, c.args, c.expected);
    }
    nlohmann::ordered_json row;
    row["id"] = fmt::format("code-{}-{}-{}", o.split, o.seed, rows.size());
    row["messages"] = nlohmann::ordered_json::array({{{"role", "user"}, {"content", prompt}}});
    row["test_cases"] = nlohmann::json::array({{{"assert_code", asserts}}}).dump();
    row["case_type"] = "assert";
    row["test_case_function"] = "";
    row["solution"] = replace_all(inst.solution, "{fn}", fn);
    row["source"] = std::string("synthetic/") + task.family;
    row["tag"] = "code";
    row["domain"] = "code_sandbox";
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace roll::pipeline
