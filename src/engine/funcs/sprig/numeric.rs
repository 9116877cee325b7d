//! Sprig's numeric functions (`numeric.go` and the arithmetic entries of
//! `genericMap`): int64 arithmetic through `cast.ToInt64` (so `add 0.5 0.5`
//! is 0), float arithmetic through shopspring/decimal (so `addf 0.1 0.2` is
//! 0.3), `round` with Sprig's float algorithm, and `seq`/`until`.
//!
//! Decimal arithmetic uses `rust_decimal`; operands are built from the
//! shortest decimal form of the float64, which is what shopspring's
//! `NewFromFloat` does, and quotients are rounded to 16 places as its
//! `Div` (`DivisionPrecision`) does.

use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use super::conv::{ParseIntError, atoi, int_list, parse_int, to_float64, to_int, to_int64};
use super::{arg, arg_int, arg_str, def, defv, tail};
use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::gofmt::to_string_v;
use crate::engine::value::Value;

use Param::{Any, Float, Int, Str};

const DIV_BY_ZERO: &str = "runtime error: integer divide by zero";

pub const FUNCS: &[FuncDef] = &[
    def("atoi", &[Str], |_, a| {
        Ok(Value::Int(match atoi(arg_str(a, 0)) {
            Ok(n) | Err(ParseIntError::Range(n)) => n,
            Err(ParseIntError::Syntax) => 0,
        }))
    }),
    def("int64", &[Any], |_, a| Ok(Value::I64(to_int64(&arg(a, 0))))),
    def("int", &[Any], |_, a| Ok(Value::Int(to_int(&arg(a, 0))))),
    def("float64", &[Any], |_, a| {
        Ok(Value::Float(to_float64(&arg(a, 0))))
    }),
    defv("seq", &[], Int, seq),
    def("toDecimal", &[Any], |_, a| {
        Ok(Value::I64(
            parse_int(&to_string_v(&arg(a, 0)), 8).unwrap_or(0),
        ))
    }),
    def("until", &[Int], |env, a| {
        let n = arg_int(a, 0);
        let step = if n < 0 { -1 } else { 1 };
        env.check_items(until_len(0, n, step), size_of::<Value>())?;
        Ok(int_list(until_step(0, n, step)))
    }),
    def("untilStep", &[Int, Int, Int], |env, a| {
        let n = until_len(arg_int(a, 0), arg_int(a, 1), arg_int(a, 2));
        env.check_items(n, size_of::<Value>())?;
        Ok(int_list(until_step(
            arg_int(a, 0),
            arg_int(a, 1),
            arg_int(a, 2),
        )))
    }),
    def("add1", &[Any], |_, a| {
        Ok(Value::I64(to_int64(&arg(a, 0)).wrapping_add(1)))
    }),
    defv("add", &[], Any, |_, a| {
        Ok(Value::I64(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
        ))
    }),
    def("sub", &[Any, Any], |_, a| {
        Ok(Value::I64(
            to_int64(&arg(a, 0)).wrapping_sub(to_int64(&arg(a, 1))),
        ))
    }),
    def("div", &[Any, Any], |_, a| {
        let d = to_int64(&arg(a, 1));
        if d == 0 {
            return Err(DIV_BY_ZERO.into());
        }
        Ok(Value::I64(to_int64(&arg(a, 0)).wrapping_div(d)))
    }),
    def("mod", &[Any, Any], |_, a| {
        let d = to_int64(&arg(a, 1));
        if d == 0 {
            return Err(DIV_BY_ZERO.into());
        }
        Ok(Value::I64(to_int64(&arg(a, 0)).wrapping_rem(d)))
    }),
    defv("mul", &[Any], Any, |_, a| {
        Ok(Value::I64(
            tail(a)
                .iter()
                .fold(to_int64(&arg(a, 0)), |acc, v| acc.wrapping_mul(to_int64(v))),
        ))
    }),
    def("add1f", &[Any], |_, a| {
        decimal_op(&arg(a, 0), &[Value::Int(1)], Op::Add)
    }),
    defv("addf", &[], Any, |_, a| {
        decimal_op(&Value::Float(0.0), a, Op::Add)
    }),
    defv("subf", &[Any], Any, |_, a| {
        decimal_op(&arg(a, 0), tail(a), Op::Sub)
    }),
    defv("divf", &[Any], Any, |_, a| {
        decimal_op(&arg(a, 0), tail(a), Op::Div)
    }),
    defv("mulf", &[Any], Any, |_, a| {
        decimal_op(&arg(a, 0), tail(a), Op::Mul)
    }),
    defv("biggest", &[Any], Any, max),
    defv("max", &[Any], Any, max),
    defv("min", &[Any], Any, |_, a| {
        Ok(Value::I64(
            tail(a)
                .iter()
                .map(to_int64)
                .fold(to_int64(&arg(a, 0)), i64::min),
        ))
    }),
    defv("maxf", &[Any], Any, |_, a| {
        Ok(Value::Float(
            tail(a)
                .iter()
                .map(to_float64)
                .fold(to_float64(&arg(a, 0)), go_max),
        ))
    }),
    defv("minf", &[Any], Any, |_, a| {
        Ok(Value::Float(
            tail(a)
                .iter()
                .map(to_float64)
                .fold(to_float64(&arg(a, 0)), go_min),
        ))
    }),
    def("ceil", &[Any], |_, a| {
        Ok(Value::Float(to_float64(&arg(a, 0)).ceil()))
    }),
    def("floor", &[Any], |_, a| {
        Ok(Value::Float(to_float64(&arg(a, 0)).floor()))
    }),
    defv("round", &[Any, Int], Float, round),
];

fn max(_: &Env, a: &[Value]) -> FuncResult {
    Ok(Value::I64(
        tail(a)
            .iter()
            .map(to_int64)
            .fold(to_int64(&arg(a, 0)), i64::max),
    ))
}

/// Go's `math.Max`: NaN wins, +0 beats -0.
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x > 0.0 || y.is_infinite() && y > 0.0 {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { y } else { x };
    }
    if x > y { x } else { y }
}

/// Go's `math.Min`: NaN wins, -0 beats +0.
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x < 0.0 || y.is_infinite() && y < 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { x } else { y };
    }
    if x < y { x } else { y }
}

/// How many numbers [`until_step`] yields, without making them.
pub fn until_len(start: i64, stop: i64, step: i64) -> u64 {
    let (start, stop, step) = (start as i128, stop as i128, step as i128);
    let n = if stop < start && step < 0 {
        (start - stop + (-step) - 1) / -step
    } else if stop > start && step > 0 {
        (stop - start + step - 1) / step
    } else {
        0
    };
    n as u64
}

/// Sprig's `untilStep`.
pub fn until_step(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return v;
        }
        let mut i = start;
        while i > stop {
            v.push(i);
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        return v;
    }
    if step <= 0 {
        return v;
    }
    let mut i = start;
    while i < stop {
        v.push(i);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    v
}

fn seq(env: &Env, a: &[Value]) -> FuncResult {
    let p: Vec<i64> = a
        .iter()
        .map(|v| {
            if let Value::Int(n) | Value::I64(n) = v {
                *n
            } else {
                0
            }
        })
        .collect();
    let items = match p.len() {
        1 => {
            let (start, end) = (1, p[0]);
            let inc = if end < start { -1 } else { 1 };
            checked_until(env, start, end.wrapping_add(inc), inc)?
        }
        2 => {
            let (start, end) = (p[0], p[1]);
            let step = if end < start { -1 } else { 1 };
            checked_until(env, start, end.wrapping_add(step), step)?
        }
        3 => {
            let (start, step, end) = (p[0], p[1], p[2]);
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::str(""));
                }
            }
            checked_until(env, start, end.wrapping_add(inc), step)?
        }
        _ => Vec::new(),
    };
    Ok(Value::string(
        items
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(" "),
    ))
}

/// [`until_step`] for `seq`, whose numbers become text: at least two
/// bytes each (`"1 "`), after eight each while they are made.
fn checked_until(env: &Env, start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    env.check_items(until_len(start, stop, step), size_of::<i64>())?;
    Ok(until_step(start, stop, step))
}

/// Sprig's `round`, float arithmetic as in Go.
fn round(_: &Env, a: &[Value]) -> FuncResult {
    let round_on = match a.get(2) {
        Some(Value::Float(f)) => *f,
        _ => 0.5,
    };
    let val = to_float64(&arg(a, 0));
    let places = arg_int(a, 1) as f64;
    let pow = 10f64.powf(places);
    let digit = pow * val;
    let frac = digit.fract();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(r / pow))
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// shopspring's `NewFromFloat`: the shortest decimal that round-trips.
fn decimal_from_f64(f: f64) -> Option<Decimal> {
    if !f.is_finite() {
        return None;
    }
    let s = format!("{f:e}");
    Decimal::from_scientific(&s)
        .ok()
        .or_else(|| Decimal::from_str(&format!("{f}")).ok())
}

/// Sprig's `execDecimalOp`.
fn decimal_op(first: &Value, rest: &[Value], op: Op) -> FuncResult {
    let fa = to_float64(first);
    let xs: Vec<f64> = rest.iter().map(to_float64).collect();
    if let Some(bad) = std::iter::once(fa)
        .chain(xs.iter().copied())
        .find(|f| !f.is_finite())
    {
        // shopspring's NewFromFloat panics on NaN and ±Inf.
        return Err(format!(
            "Cannot create a Decimal from {}",
            crate::engine::gofmt::to_string_v(&Value::Float(bad))
        ));
    }
    if op_is_div_by_zero(&xs, op) {
        return Err("decimal division by 0".into());
    }
    match exact_decimal_op(fa, &xs, op) {
        Some(f) => Ok(Value::Float(f)),
        // Beyond rust_decimal's range (28 digits, |x| < 7.9e28) shopspring
        // would still be exact; float64 arithmetic is the closest we get.
        None => Ok(Value::Float(xs.iter().fold(fa, |acc, &x| match op {
            Op::Add => acc + x,
            Op::Sub => acc - x,
            Op::Mul => acc * x,
            Op::Div => acc / x,
        }))),
    }
}

fn op_is_div_by_zero(xs: &[f64], op: Op) -> bool {
    matches!(op, Op::Div) && xs.contains(&0.0)
}

fn exact_decimal_op(fa: f64, xs: &[f64], op: Op) -> Option<f64> {
    let mut acc = decimal_from_f64(fa)?;
    for &fx in xs {
        let x = decimal_from_f64(fx)?;
        acc = match op {
            Op::Add => acc.checked_add(x)?,
            Op::Sub => acc.checked_sub(x)?,
            Op::Mul => acc.checked_mul(x)?,
            Op::Div => acc
                .checked_div(x)?
                .round_dp_with_strategy(16, RoundingStrategy::MidpointAwayFromZero),
        };
    }
    acc.to_string().parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{err, f, i, s, v};

    #[test]
    fn integer_arithmetic_truncates() {
        assert_eq!(v("add", &[f(0.5), f(0.5)]), "0");
        assert_eq!(v("add", &[f(8080.0), i(1)]), "8081");
        assert_eq!(v("div", &[i(7), i(2)]), "3");
        assert_eq!(v("mod", &[i(-7), i(2)]), "-1");
        assert_eq!(v("mul", &[i(2), s("3"), f(1.9)]), "6");
        assert_eq!(v("max", &[i(1), s("5"), f(3.0)]), "5");
        assert_eq!(v("min", &[i(1), s("-5")]), "-5");
        assert_eq!(
            err("div", &[i(1), i(0)]),
            "runtime error: integer divide by zero"
        );
        assert_eq!(v("int", &[s("010")]), "8");
        assert_eq!(v("int64", &[s("0x10")]), "16");
        assert_eq!(v("atoi", &[s("010")]), "10");
        assert_eq!(v("atoi", &[s("x")]), "0");
        assert_eq!(v("toDecimal", &[s("0777")]), "511");
        assert_eq!(v("toDecimal", &[i(777)]), "511");
        assert_eq!(v("toDecimal", &[s("9")]), "0");
    }

    #[test]
    fn decimal_arithmetic() {
        assert_eq!(v("addf", &[f(0.1), f(0.2)]), "0.3");
        assert_eq!(v("subf", &[f(1.0), f(0.9)]), "0.1");
        assert_eq!(v("mulf", &[f(1.1), i(3)]), "3.3");
        assert_eq!(v("divf", &[i(1), i(3)]), "0.3333333333333333");
        assert_eq!(v("add1f", &[f(1.5)]), "2.5");
        assert_eq!(v("maxf", &[f(1.5), i(2)]), "2");
        assert_eq!(v("minf", &[f(1.5), i(2)]), "1.5");
        assert_eq!(v("round", &[f(2.675), i(2)]), "2.68");
        assert_eq!(v("round", &[f(-2.5), i(0)]), "-3");
        assert_eq!(v("floor", &[s("1.7")]), "1");
        assert_eq!(v("ceil", &[f(1.2)]), "2");
        assert_eq!(err("divf", &[i(1), i(0)]), "decimal division by 0");
        assert_eq!(v("addf", &[f(1e30), i(1)]), "1e+30");
        assert_eq!(v("mulf", &[f(1e200), f(1e200)]), "+Inf");
        assert_eq!(v("subf", &[f(1e-10), f(1e-11)]), "9e-11");
        assert_eq!(v("divf", &[i(1), i(7)]), "0.1428571428571429");
        assert_eq!(v("divf", &[i(10), i(3)]), "3.3333333333333335");
        assert_eq!(v("mulf", &[f(1.1), f(1.1)]), "1.21");
        assert_eq!(
            v("mulf", &[f(123456789.123), f(987654321.987)]),
            "1.219326313559686e+17"
        );
    }

    #[test]
    fn sequences() {
        assert_eq!(v("until", &[i(3)]), "[0 1 2]");
        assert_eq!(v("until", &[i(-2)]), "[0 -1]");
        assert_eq!(v("untilStep", &[i(0), i(10), i(3)]), "[0 3 6 9]");
        assert_eq!(v("seq", &[i(3)]), "1 2 3");
        assert_eq!(v("seq", &[i(0)]), "1 0");
        assert_eq!(v("seq", &[i(2), i(-2)]), "2 1 0 -1 -2");
        assert_eq!(v("seq", &[i(0), i(2), i(7)]), "0 2 4 6");
        assert_eq!(v("seq", &[i(5), i(1), i(2)]), "");
        assert_eq!(v("seq", &[]), "");
    }
}
