// The hard and random texts of the parity tests (parity_cases.hpp).
#include "parity_cases.hpp"

#include <random>

namespace llmrdzv::test {

const std::vector<std::string>& hard_cases() {
  static const std::vector<std::string> cases = {
      "",
      "Hello world",
      "   leading spaces",
      "trailing spaces   ",
      "tabs\t\tand\nnewlines\n\n\n",
      "windows\r\nline\r\nends\r\n",
      "a  b   c    d     e",
      " ",
      "\n",
      "   \n   x",
      " \n\n y",
      "it's I'm we're they've you'll he'd don't",
      "IT'S CAPS'S 'S",
      "'s at the start",
      "''s and ''''ll",
      " 's and x' and 'x",
      "rock'n'roll o'clock",
      "1234567890 3.14159 1,000,000 -42 x2",
      "\u0661\u0662\u0663 \u216B \u2163 \u00BD \u00B2 \u2460",
      "\u041F\u0440\u0438\u0432\u0435\u0442 \u043C\u0438\u0440",
      "\u0393\u03B5\u03B9\u03AC \u03C3\u03BF\u03C5 \u03BA\u03CC\u03C3\u03BC\u03B5",
      "\u4F60\u597D\uFF0C\u4E16\u754C\u3002",
      "\u3053\u3093\u306B\u3061\u306F\u4E16\u754C",
      "\uC548\uB155\uD558\uC138\uC694",
      "\u0645\u0631\u062D\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
      "\u05E9\u05DC\u05D5\u05DD \u05E2\u05D5\u05DC\u05DD",
      "\u0928\u092E\u0938\u094D\u0924\u0947 \u0926\u0941\u0928\u093F\u092F\u093E",
      "\u0E20\u0E32\u0E29\u0E32\u0E44\u0E17\u0E22",
      "\U0001F44D\U0001F3FD family \U0001F468\u200D\U0001F469\u200D\U0001F467 flags \U0001F1E9\U0001F1EA \U0001F600\U0001F600",
      "e\u0301 cafe\u0301 Z\u0324\u0354\u0367\u0311a\u0308\u0356",
      // What NFC changes: Hangul jamo, marks out of canonical order, singletons, exclusions.
      "\u1100\u1161\u11A8 \uAC00\u11A8 a\u0301\u0323 a\u0323\u0301 \u212B\u2126\uF900 \u0958 \u1E9B\u0323 \u0344",
      "a\u00A0b\u2003c\u3000d\u2028e\u0085f\u1680g",
      "x\u00A0\u00A0y \u00A0z",
      "zero\u200Bwidth \u200B space",
      "def f(x):\n    return x**2  # comment\n\n\n",
      std::string(300, '='),
      std::string(200, ' ') + "x",
      std::string(500, 'a'),
      "<|endoftext|>",
      "a<|endoftext|>b",
      "<|endoftext|><|endoftext|>",
      "<|endoftext",
      " <|endoftext|> ",
      "\xff",
      "abc\xff" "def",
      "\xc3\x28",
      "\xe2\x82\x28",
      "\xed\xa0\x80 surrogate",
      "\xf0\x9f\x98 truncated emoji",
      "\xc0\xaf overlong",
      "\xf5\x80\x80\x80 too big",
      "a \xff b",
      "  \xfe  ",
      "it'\xff" "s",
      std::string("\x00\x01\x1f\x7f", 4),
      "\x1c\x1d\x1e\x1f are not White_Space",
      // Llama 3's pattern: contractions in any case (and U+017F, whose case folding is 's'), a
      // character before letters, numbers in threes, punctuation with its line breaks.
      "IT'S WE'RE THEY'VE I'M YOU'LL HE'D DON'T 'S 'Re 'lL x'\u017F",
      "\tindented (parenthesised) \"quoted\" -dash _under",
      "a.\n\nb!\r\n\r\nc?  \n  d \t\n\t e",
      "1 12 123 1234 12345 1234567890123 \u0661\u0662\u0663\u0664",
      "x\u00A0y \u00A0z\u3000w",
      "<s>a</s> <s> b<unk><|begin_of_text|>c<|eot_id|>",
      "\u2581already \u2581\u2581spaced",
      " leading space",
      "  two leading spaces",
  };
  return cases;
}

// Random strings from the pieces GPT-2's pattern cares about, in any order.
std::vector<std::string> random_cases(std::size_t count, std::uint32_t seed) {
  static const std::vector<std::string> atoms = {
      "a", "Z", "the", " ", "  ", "\t", "\n", "\r\n", "'", "'s", "'re", "'ll", "'d", "'t", "'m", "'ve",
      "0", "42", "\u00BD", "\u0663", "!", "?!", ".", ",", "-", "(", "\"", "#", "\u00E9", "e\u0301",
      "\u00DF", "\u0416", "\u4E2D", "\u3042", "\uD55C", "\u05D0", "\u0915\u094D", "\U0001F600",
      "\u200D", "\u00A0", "\u3000", "\u2028", "\u0085", "<|endoftext|>", "\xff", "\xc3", "\x80",
      "\xe2\x82", "\xf0\x9f", "\x1c", std::string(1, '\0'), "'S", "'RE", "\u017F", "<s>", "</s>",
      "<|eot_id|>", "\u2581", "123456", "\r\n\r\n", "\t\t"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, atoms.size() - 1);
  std::uniform_int_distribution<int> length(1, 24);
  std::vector<std::string> cases;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text;
    for (int n = length(rng); n > 0; --n) text += atoms[pick(rng)];
    cases.push_back(std::move(text));
  }
  return cases;
}

// Valid UTF-8 text to train the vocabulary on: the valid hard cases and some prose.
std::string training_text() {
  std::string text;
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (const std::string& c : hard_cases()) {
      if (c.find('\xff') == std::string::npos && c.find('\x80') == std::string::npos) text += c + "\n";
    }
    text += "The quick brown fox jumps over the lazy dog. It's 12:30 and we've got 3 cats.\n";
    text += "Les \u00E9l\u00E8ves \u00E9tudient. Die Stra\u00DFe ist gro\u00DF. \u65E5\u672C\u8A9E\u306E\u6587\u7AE0\u3002\n";
  }
  return text;
}

}  // namespace llmrdzv::test
