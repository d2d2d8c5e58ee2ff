//! The expression language of the `calc` tool: numbers, `+ - * / % ^`, parentheses and unary
//! minus, with the usual precedence (`^` above unary minus above `* / %` above `+ -`; `^`
//! right-associative: `2^3^2` is `2^9`; `-2^2` is `-(2^2)`). A recursive-descent parser over
//! `f64`, no evaluation of anything else.
//!
//! ```
//! use cameleon::tools::calc_eval;
//!
//! assert_eq!(calc_eval("2 + 3 * 4"), Ok(14.0));
//! assert_eq!(calc_eval("2 ^ 3 ^ 2"), Ok(512.0));
//! assert_eq!(calc_eval("-(1 + 2) % 2"), Ok(-1.0));
//! assert!(calc_eval("1 / 0").unwrap_err().to_string().contains("division by zero"));
//! ```

use std::fmt;

/// Deepest nesting of parentheses and unary operators accepted (hostile input cannot exhaust
/// the stack).
const MAX_DEPTH: usize = 200;
/// Longest expression accepted, in bytes.
const MAX_LEN: usize = 10_000;

/// Why an expression has no value: a syntax error at a column, or an arithmetic one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    /// The text is not an expression.
    #[error("syntax error at column {column}: {message}")]
    Syntax {
        /// 1-based column (in characters).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Division (or `%`) by zero.
    #[error("division by zero at column {column}")]
    DivisionByZero {
        /// 1-based column of the operator.
        column: usize,
    },
    /// The result is infinite or not a number (an overflow, `(-8) ^ 0.5`).
    #[error("the result is not a finite number ({0})")]
    NotFinite(String),
}

/// Evaluates `expr`.
pub fn eval(expr: &str) -> Result<f64, CalcError> {
    if expr.len() > MAX_LEN {
        return Err(CalcError::Syntax {
            column: 1,
            message: format!("the expression is longer than {MAX_LEN} bytes"),
        });
    }
    let mut p = Parser {
        chars: expr.chars().collect(),
        pos: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.skip_spaces();
    if let Some(c) = p.peek() {
        return Err(p.syntax(format!("unexpected `{c}` after a complete expression")));
    }
    if !v.is_finite() {
        return Err(CalcError::NotFinite(Show(v).to_string()));
    }
    Ok(v)
}

struct Show(f64);

impl fmt::Display for Show {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_nan() {
            f.write_str("not a number")
        } else {
            f.write_str("infinite")
        }
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// The next character that is not a space, consumed if it is one of `ops`.
    fn op(&mut self, ops: &[char]) -> Option<(char, usize)> {
        self.skip_spaces();
        let c = self.peek()?;
        if ops.contains(&c) {
            self.pos += 1;
            Some((c, self.pos))
        } else {
            None
        }
    }

    fn syntax(&self, message: impl Into<String>) -> CalcError {
        CalcError::Syntax {
            column: self.pos + 1,
            message: message.into(),
        }
    }

    fn deeper(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.syntax(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<f64, CalcError> {
        let mut v = self.product()?;
        while let Some((op, _)) = self.op(&['+', '-']) {
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    /// product := unary (('*' | '/' | '%') unary)*
    fn product(&mut self) -> Result<f64, CalcError> {
        let mut v = self.unary()?;
        while let Some((op, column)) = self.op(&['*', '/', '%']) {
            let r = self.unary()?;
            v = match op {
                '*' => v * r,
                _ if r == 0.0 => return Err(CalcError::DivisionByZero { column }),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    /// unary := ('-' | '+') unary | power
    fn unary(&mut self) -> Result<f64, CalcError> {
        if let Some((op, _)) = self.op(&['-', '+']) {
            self.deeper()?;
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(if op == '-' { -v } else { v });
        }
        self.power()
    }

    /// power := atom ('^' unary)?  — right-associative, and binds tighter than a unary minus
    /// on its left (`-2^2` is `-4`) but takes one on its right (`2^-1` is `0.5`).
    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.atom()?;
        if self.op(&['^']).is_some() {
            self.deeper()?;
            let exp = self.unary()?;
            self.depth -= 1;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    /// atom := number | '(' sum ')'
    fn atom(&mut self) -> Result<f64, CalcError> {
        self.skip_spaces();
        match self.peek() {
            None => Err(self.syntax("the expression ends where a number or `(` was expected")),
            Some('(') => {
                let open = self.pos;
                self.pos += 1;
                self.deeper()?;
                let v = self.sum()?;
                self.depth -= 1;
                self.skip_spaces();
                if self.peek() == Some(')') {
                    self.pos += 1;
                    Ok(v)
                } else {
                    Err(CalcError::Syntax {
                        column: open + 1,
                        message: "this `(` is never closed".into(),
                    })
                }
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) => Err(self.syntax(format!("expected a number or `(`, found `{c}`"))),
        }
    }

    /// A decimal number: digits, an optional fraction, an optional exponent (`1.5e3`).
    fn number(&mut self) -> Result<f64, CalcError> {
        let start = self.pos;
        let digits = |p: &mut Parser| {
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.pos += 1;
            }
        };
        digits(self);
        if self.peek() == Some('.') {
            self.pos += 1;
            digits(self);
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                digits(self);
            } else {
                self.pos = save;
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse::<f64>().map_err(|_| CalcError::Syntax {
            column: start + 1,
            message: format!("`{text}` is not a number"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_is_the_usual_one() {
        assert_eq!(eval("2 + 3 * 4"), Ok(14.0));
        assert_eq!(eval("(2 + 3) * 4"), Ok(20.0));
        assert_eq!(eval("10 - 4 - 3"), Ok(3.0));
        assert_eq!(eval("100 / 10 / 5"), Ok(2.0));
        assert_eq!(eval("7 % 4 * 2"), Ok(6.0));
        assert_eq!(eval("2 * 3 ^ 2"), Ok(18.0));
    }

    #[test]
    fn power_is_right_associative_and_above_unary_minus() {
        assert_eq!(eval("2 ^ 3 ^ 2"), Ok(512.0));
        assert_eq!(eval("-2 ^ 2"), Ok(-4.0));
        assert_eq!(eval("(-2) ^ 2"), Ok(4.0));
        assert_eq!(eval("2 ^ -1"), Ok(0.5));
        assert_eq!(eval("--3"), Ok(3.0));
    }

    #[test]
    fn numbers_take_fractions_and_exponents() {
        assert_eq!(eval("1.5e3 + .5"), Ok(1500.5));
        assert_eq!(eval(" 42 "), Ok(42.0));
    }

    #[test]
    fn division_and_remainder_by_zero_are_errors() {
        assert_eq!(eval("1 / 0"), Err(CalcError::DivisionByZero { column: 3 }));
        assert_eq!(
            eval("5 % (2 - 2)"),
            Err(CalcError::DivisionByZero { column: 3 })
        );
    }

    #[test]
    fn bad_syntax_is_located() {
        let col = |e: &str| match eval(e) {
            Err(CalcError::Syntax { column, .. }) => column,
            other => panic!("{e}: {other:?}"),
        };
        assert_eq!(col("2 +"), 4);
        assert_eq!(col("2 * (3 + 4"), 5);
        assert_eq!(col("2 3"), 3);
        assert_eq!(col("abc"), 1);
        assert_eq!(col(""), 1);
        assert_eq!(col("1 + )"), 5);
    }

    #[test]
    fn hostile_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(matches!(eval(&deep), Err(CalcError::Syntax { .. })));
        let minus = format!("{}1", "-".repeat(5_000));
        assert!(matches!(eval(&minus), Err(CalcError::Syntax { .. })));
    }

    #[test]
    fn overflow_is_not_a_finite_result() {
        assert!(matches!(eval("10 ^ 400"), Err(CalcError::NotFinite(_))));
    }
}
