//! Sprig v3.3.0's random functions: `randAlphaNum`, `randAlpha`,
//! `randNumeric`, `randAscii` (goutils' `CryptoRandom*`), `randInt`,
//! `shuffle` (xstrings) and `uuidv4`.
//!
//! Every draw comes from `env.rng`, so [`Env::reproducible`] gives the same
//! output on every run. The character sets are the ones goutils ends up
//! accepting: it draws code points from `' '..='z'` (or `32..=126` for
//! ASCII) and keeps letters and/or digits, which makes each result uniform
//! over the sets below.

use rand::RngExt;

use crate::engine::funcs::{Env, FuncDef, FuncResult, Param};
use crate::engine::value::Value;

const DIGITS: &[u8] = b"0123456789";
const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `count` characters drawn uniformly from `set`; goutils returns an error
/// for a negative count, which Sprig discards, so that is "".
fn random_from(env: &Env, count: &Value, set: &[u8]) -> FuncResult {
    let n = match count {
        Value::Int(n) | Value::I64(n) => *n,
        _ => 0,
    };
    env.check_alloc(n.max(0) as u64)?;
    let mut rng = env.rng();
    let s: String = (0..n.max(0))
        .map(|_| set[rng.random_range(0..set.len())] as char)
        .collect();
    Ok(Value::string(s))
}

fn rand_alpha_num(env: &Env, a: &[Value]) -> FuncResult {
    random_from(env, &a[0], ALNUM)
}

fn rand_alpha(env: &Env, a: &[Value]) -> FuncResult {
    random_from(env, &a[0], ALPHA)
}

fn rand_numeric(env: &Env, a: &[Value]) -> FuncResult {
    random_from(env, &a[0], DIGITS)
}

/// `CryptoRandomAscii`: code points 32 to 126, space included.
fn rand_ascii(env: &Env, a: &[Value]) -> FuncResult {
    let printable: Vec<u8> = (32u8..=126).collect();
    random_from(env, &a[0], &printable)
}

/// `rand.Intn(max-min) + min`; `Intn` panics on a non-positive bound, which
/// text/template reports as the call's error.
fn rand_int(env: &Env, a: &[Value]) -> FuncResult {
    let (min, max) = match (&a[0], &a[1]) {
        (Value::Int(min), Value::Int(max)) => (*min, *max),
        _ => return Err("invalid argument to Intn".into()),
    };
    let n = max.wrapping_sub(min);
    if n <= 0 {
        return Err("invalid argument to Intn".into());
    }
    Ok(Value::Int(env.rng().random_range(0..n).wrapping_add(min)))
}

/// Sprig's `randBytes`: `count` random bytes, base64-encoded (std alphabet).
fn rand_bytes(env: &Env, a: &[Value]) -> FuncResult {
    use base64::Engine as _;
    let count = match &a[0] {
        Value::Int(n) => *n,
        _ => 0,
    };
    // Go's `make([]byte, count)` panics on a negative length.
    let Ok(count) = usize::try_from(count) else {
        return Err("runtime error: makeslice: len out of range".into());
    };
    // The base64 text is a third longer than the bytes.
    env.check_alloc((count as u64).saturating_mul(4) / 3)?;
    let mut buf = vec![0u8; count];
    rand::Rng::fill_bytes(&mut *env.rng(), &mut buf);
    Ok(Value::string(
        base64::engine::general_purpose::STANDARD.encode(buf),
    ))
}

/// xstrings' `Shuffle`: Fisher–Yates over the string's runes.
fn shuffle(env: &Env, a: &[Value]) -> FuncResult {
    let mut runes: Vec<char> = a[0].as_str().unwrap_or_default().chars().collect();
    let mut rng = env.rng();
    for i in (1..runes.len()).rev() {
        let j = rng.random_range(0..=i);
        runes.swap(i, j);
    }
    Ok(Value::string(runes.into_iter().collect()))
}

/// google/uuid's `New()`: a version 4 UUID, lower-case and hyphenated.
fn uuidv4(env: &Env, _: &[Value]) -> FuncResult {
    let mut bytes = [0u8; 16];
    env.rng().fill(&mut bytes);
    Ok(Value::string(
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string(),
    ))
}

pub const FUNCS: &[FuncDef] = {
    use Param::{Int, Str};
    &[
        super::def("randAlphaNum", &[Int], rand_alpha_num),
        super::def("randAlpha", &[Int], rand_alpha),
        super::def("randNumeric", &[Int], rand_numeric),
        super::def("randAscii", &[Int], rand_ascii),
        super::def("randInt", &[Int, Int], rand_int),
        super::def("shuffle", &[Str], shuffle),
        super::def("uuidv4", &[], uuidv4),
        super::def("randBytes", &[Int], rand_bytes),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    fn env(seed: u64) -> Env {
        Env::reproducible(seed, chrono::DateTime::UNIX_EPOCH.fixed_offset())
    }

    fn text(v: FuncResult) -> String {
        v.unwrap().as_str().unwrap().to_string()
    }

    #[test]
    fn strings_use_sprigs_character_sets() {
        let e = env(7);
        let s = text(rand_alpha_num(&e, &[Value::Int(200)]));
        assert_eq!(s.len(), 200);
        assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(
            text(rand_alpha(&e, &[Value::Int(200)]))
                .bytes()
                .all(|b| b.is_ascii_alphabetic())
        );
        assert!(
            text(rand_numeric(&e, &[Value::Int(200)]))
                .bytes()
                .all(|b| b.is_ascii_digit())
        );
        let a = text(rand_ascii(&e, &[Value::Int(500)]));
        assert!(a.bytes().all(|b| (32..=126).contains(&b)));
        assert!(a.contains(' '));
        assert_eq!(text(rand_alpha(&e, &[Value::Int(-3)])), "");
        assert_eq!(text(rand_alpha(&e, &[Value::Int(0)])), "");
    }

    #[test]
    fn reproducible_with_a_seed() {
        let draw = |seed| {
            let e = env(seed);
            (
                text(rand_alpha_num(&e, &[Value::Int(16)])),
                text(uuidv4(&e, &[])),
                text(shuffle(&e, &[Value::str("abcdefghij")])),
            )
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
    }

    #[test]
    fn uuid_is_version_4() {
        let u = text(uuidv4(&env(1), &[]));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(u, u.to_lowercase());
    }

    #[test]
    fn rand_int_range_and_error() {
        let e = env(3);
        for _ in 0..100 {
            let Value::Int(n) = rand_int(&e, &[Value::Int(-2), Value::Int(3)]).unwrap() else {
                panic!()
            };
            assert!((-2..3).contains(&n));
        }
        assert_eq!(
            rand_int(&e, &[Value::Int(3), Value::Int(3)]).unwrap_err(),
            "invalid argument to Intn"
        );
    }

    #[test]
    fn shuffle_keeps_runes() {
        let s = text(shuffle(&env(5), &[Value::str("héllo wörld")]));
        let mut a: Vec<char> = s.chars().collect();
        let mut b: Vec<char> = "héllo wörld".chars().collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert_eq!(text(shuffle(&env(5), &[Value::str("")])), "");
    }
}
