//! Cases whose expected values were produced by the real helm v3.17.3
//! (throw-away charts rendered with `helm template`), calling the function
//! implementations directly with the arguments the template passed.

use super::testutil::{call, d, err, f, i, l, s, v};
use crate::engine::value::Value;

fn n() -> Value {
    Value::Nil
}

#[test]
fn string_case_functions() {
    assert_eq!(
        v("title", &[s("hello wORLD-foo_bar x.y ǆemal")]),
        "Hello WORLD-Foo_bar X.Y ǅemal"
    );
    assert_eq!(
        v("swapcase", &[s("This Is A.Test ǆx")]),
        "tHIS iS a.tEST ǅX"
    );
    assert_eq!(v("untitle", &[s("Hello World ÉCOLE")]), "hello world éCOLE");
    assert_eq!(v("snakecase", &[s("HTTPStatusCode")]), "http_status_code");
    assert_eq!(v("snakecase", &[s("already_snake")]), "already_snake");
    assert_eq!(
        v("snakecase", &[s("SimpleXMLParser2Go")]),
        "simple_xml_parser2_go"
    );
    assert_eq!(v("snakecase", &[s("a.b-c d")]), "a.b_c_d");
    assert_eq!(v("snakecase", &[s("ÉcoleNormale")]), "école_normale");
    assert_eq!(v("kebabcase", &[s("HTTPStatusCode")]), "http-status-code");
    assert_eq!(v("kebabcase", &[s("fooBar_baz")]), "foo-bar-baz");
    assert_eq!(v("kebabcase", &[s("V2Api")]), "v2-api");
    assert_eq!(v("camelcase", &[s("hello_world")]), "HelloWorld");
    assert_eq!(v("camelcase", &[s("HELLO-WORLD")]), "HelloWorld");
    assert_eq!(v("camelcase", &[s("hello world foo")]), "HelloWorldFoo");
    assert_eq!(v("camelcase", &[s("x")]), "X");
    assert_eq!(v("camelcase", &[s("alreadyCamel")]), "AlreadyCamel");
    assert_eq!(v("camelcase", &[s("__a")]), "__A");
    assert_eq!(v("upper", &[s("straße")]), "STRAßE");
}

#[test]
fn string_byte_functions() {
    assert_eq!(v("nospace", &[s("hé llo")]), "hÃ©llo");
    assert_eq!(v("initials", &[s("école Normale")]), "ÃN");
    assert_eq!(
        v(
            "wrap",
            &[i(10), s("the quick brown fox jumps over the lazy dog")]
        ),
        "the quick\nbrown fox\njumps over\nthe lazy\ndog"
    );
    assert_eq!(
        v("wrapWith", &[i(5), s("\n"), s("averyveryverylongword x")]),
        "avery\nveryv\nerylo\nngwor\nd x"
    );
    assert_eq!(
        v("wrap", &[i(3), s("averyveryverylongword x y")]),
        "averyveryverylongword\nx y"
    );
    assert_eq!(v("abbrev", &[i(8), s("héllo world")]), "héll...");
    assert_eq!(
        v("abbrevboth", &[i(5), i(10), s("1234 5678 9123 4567")]),
        "...5678..."
    );
    assert_eq!(v("abbrevboth", &[i(0), i(4), s("abcdefgh")]), "a...");
    assert_eq!(
        v("abbrevboth", &[i(1), i(6), s("abcdefghij")]),
        "abcdefghij"
    );
    assert_eq!(
        err("substr", &[i(-1), i(9), s("abc")]),
        "runtime error: slice bounds out of range [:9] with length 3"
    );
    assert_eq!(
        err("substr", &[i(3), i(2), s("abc")]),
        "runtime error: slice bounds out of range [3:2]"
    );
    assert_eq!(
        err("substr", &[i(5), i(-1), s("abc")]),
        "runtime error: slice bounds out of range [5:3]"
    );
    assert_eq!(
        err("substr", &[i(-1), i(-1), s("abc")]),
        "runtime error: slice bounds out of range [:-1]"
    );
    assert_eq!(
        err("repeat", &[i(-1), s("a")]),
        "strings: negative Repeat count"
    );
    assert_eq!(
        err("indent", &[i(-1), s("a")]),
        "strings: negative Repeat count"
    );
}

#[test]
fn quoting_and_printing() {
    assert_eq!(
        v(
            "quote",
            &[
                s("tab\there"),
                s("nl\n"),
                s("uni\u{2028}"),
                s("bell\x07"),
                s("emoji😀"),
                s("\u{ad}")
            ]
        ),
        r#""tab\there" "nl\n" "uni\u2028" "bell\a" "emoji😀" "\u00ad""#
    );
    assert_eq!(
        v("squote", &[s("a'b"), f(1.5), n(), Value::Bool(true)]),
        "'a'b' '1.5' 'true'"
    );
    assert_eq!(
        v(
            "cat",
            &[s("a"), n(), i(1), l(vec![i(1), i(2)]), d(&[("k", s("v"))])]
        ),
        "a 1 [1 2] map[k:v]"
    );
    assert_eq!(
        v("sortAlpha", &[l(vec![i(10), i(9), s("b"), s("B"), n()])]),
        "[10 9 B b]"
    );
    assert_eq!(v("sortAlpha", &[s("x")]), "[x]");
    assert_eq!(v("sortAlpha", &[n()]), "[<nil>]");
    assert_eq!(
        v("uniq", &[l(vec![i(1), i(1), s("1"), f(1.0), n(), n()])]),
        "[1 1 1 <nil>]"
    );
    assert_eq!(
        v(
            "compact",
            &[l(vec![i(0), i(1), s(""), n(), Value::Bool(false), s("a")])]
        ),
        "[1 a]"
    );
    assert_eq!(v("splitn", &[s("/"), i(0), s("a/b")]), "map[]");
    assert_eq!(v("splitn", &[s(""), i(2), s("abc")]), "map[_0:a _1:bc]");
    assert_eq!(v("split", &[s(""), s("abc")]), "map[_0:a _1:b _2:c]");
    assert_eq!(v("splitList", &[s(""), s("")]), "[]");
    assert_eq!(v("splitList", &[s(","), s("")]), "[]");
}

#[test]
fn result_types() {
    let t = |name: &str, args: &[Value]| match call(name, args) {
        Ok(v) => v.type_name().to_string(),
        Err(e) => e,
    };
    assert_eq!(t("split", &[s(","), s("a")]), "map[string]string");
    assert_eq!(t("splitList", &[s(","), s("a")]), "[]string");
    assert_eq!(t("until", &[i(2)]), "[]int");
    assert_eq!(t("keys", &[d(&[])]), "[]string");
    assert_eq!(t("toStrings", &[l(vec![i(1)])]), "[]string");
    let Ok(sl) = call("splitList", &[s(","), s("a,b")]) else {
        panic!()
    };
    assert_eq!(t("slice", &[sl, i(1)]), "[]string");
    assert_eq!(t("add", &[i(1), i(2)]), "int64");
    assert_eq!(t("int", &[i(1)]), "int");
    assert_eq!(t("atoi", &[s("1")]), "int");
    assert_eq!(t("max", &[i(1), i(2)]), "int64");
    assert_eq!(t("round", &[i(1), i(1)]), "float64");
    assert_eq!(t("toDecimal", &[i(1)]), "int64");
}

#[test]
fn json() {
    assert_eq!(
        v(
            "toJson",
            &[l(vec![
                i(1),
                f(1.5),
                f(1e21),
                f(1e-7),
                f(0.000001),
                s("x"),
                n(),
                Value::Bool(true),
                d(&[("b", i(1)), ("a", l(vec![]))]),
            ])]
        ),
        r#"[1,1.5,1e+21,1e-7,0.000001,"x",null,true,{"a":[],"b":1}]"#
    );
    assert_eq!(
        v(
            "toPrettyJson",
            &[d(&[
                ("b", l(vec![i(1), d(&[])])),
                ("a", d(&[("c", s("<"))]))
            ])]
        ),
        "{\n  \"a\": {\n    \"c\": \"\\u003c\"\n  },\n  \"b\": [\n    1,\n    {}\n  ]\n}"
    );
    assert_eq!(
        v("toRawJson", &[d(&[("a", s("<&>")), ("b", s("\u{2028}"))])]),
        r#"{"a":"<&>","b":"\u2028"}"#
    );
    assert_eq!(
        v("toJson", &[d(&[("a", s("<b>&")), ("n", f(1000000.0))])]),
        r#"{"a":"\u003cb\u003e\u0026","n":1000000}"#
    );
    assert_eq!(
        err("mustFromJson", &[s("{\"a\":[1,2")]),
        "unexpected end of JSON input"
    );
    assert_eq!(
        err("mustFromJson", &[s("\"\\x\"")]),
        "invalid character 'x' in string escape code"
    );
}

#[test]
fn semver() {
    use crate::engine::value::Member;
    let method = |ver: &str, name: &str, args: &[Value]| {
        let Ok(Value::Object(o)) = call("semver", &[s(ver)]) else {
            panic!("semver {ver}")
        };
        let Some(Member::Method(m)) = o.member(name) else {
            panic!("no method {name}")
        };
        match m(args) {
            Ok(v) => crate::engine::gofmt::to_string_v(&v),
            Err(e) => e,
        }
    };
    assert_eq!(method("v1.2.3-rc.1+b5", "Major", &[]), "1");
    assert_eq!(method("1.2", "Minor", &[]), "2");
    assert_eq!(method("1.2.3-rc.1+b5", "Prerelease", &[]), "rc.1");
    assert_eq!(method("1.2.3-rc.1+b5", "Metadata", &[]), "b5");
    assert_eq!(method("v1.2", "Original", &[]), "v1.2");
    assert_eq!(method("1.2.3", "IncMinor", &[]), "1.3.0");
    let Ok(other) = call("semver", &[s("1.3.0")]) else {
        panic!()
    };
    assert_eq!(
        method("1.2.3", "LessThan", std::slice::from_ref(&other)),
        "true"
    );
    let Ok(same) = call("semver", &[s("1.2.3")]) else {
        panic!()
    };
    assert_eq!(method("1.2.3", "Compare", &[same]), "0");
    assert_eq!(v("semver", &[s("v1.2")]), "1.2.0");
    assert_eq!(
        v(
            "toString",
            &[call("semver", &[s("v1")]).unwrap_or_default()]
        ),
        "1.0.0"
    );
    assert_eq!(
        v(
            "toJson",
            &[call("semver", &[s("v1.2")]).unwrap_or_default()]
        ),
        "\"1.2.0\""
    );
    assert_eq!(
        v(
            "typeOf",
            &[call("semver", &[s("1.0.0")]).unwrap_or_default()]
        ),
        "*semver.Version"
    );
    assert_eq!(
        v(
            "kindOf",
            &[call("semver", &[s("1.0.0")]).unwrap_or_default()]
        ),
        "ptr"
    );
    assert_eq!(
        v(
            "typeIsLike",
            &[
                s("Version"),
                call("semver", &[s("1.0.0")]).unwrap_or_default()
            ]
        ),
        "false"
    );
    let cmp = |c: &str, ver: &str| v("semverCompare", &[s(c), s(ver)]);
    assert_eq!(cmp(">=1.20.0-0", "1.21.0-eks-1"), "true");
    assert_eq!(cmp(">=1.20.0", "1.21.0-eks-1"), "false");
    assert_eq!(cmp("~1.2", "1.2.9"), "true");
    assert_eq!(cmp("^0.0", "0.0.5"), "true");
    assert_eq!(cmp("1.2.3 - 1.4", "1.4.7"), "true");
    assert_eq!(cmp("<1.x", "1.0.0-alpha"), "false");
    assert_eq!(cmp("!=1.x", "2.0.0"), "true");
    assert_eq!(cmp(">1.2", "1.2.5"), "false");
    assert_eq!(cmp("=1.2.x", "1.2.5"), "true");
    assert_eq!(
        err("semverCompare", &[s(""), s("1.2.5")]),
        "improper constraint: "
    );
    assert_eq!(
        err("semverCompare", &[s("!!1"), s("1.0.0")]),
        "improper constraint: !!1"
    );
    assert_eq!(
        err("semver", &[s("1.2.3-01")]),
        "Version segment starts with 0"
    );
}

#[test]
fn urls() {
    assert_eq!(
        v(
            "urlParse",
            &[s(
                "https://user:p%40ss@example.com:8443/a/b%2Fc?x=1&y=2#sec%20tion"
            )]
        ),
        "map[fragment:sec tion host:example.com:8443 hostname:example.com opaque: path:/a/b/c query:x=1&y=2 scheme:https userinfo:user:p%40ss]"
    );
    assert_eq!(
        v("urlParse", &[s("/rel/path?q")]),
        "map[fragment: host: hostname: opaque: path:/rel/path query:q scheme: userinfo:]"
    );
    assert_eq!(
        v("urlParse", &[s("example.com")]),
        "map[fragment: host: hostname: opaque: path:example.com query: scheme: userinfo:]"
    );
    assert_eq!(
        v("urlParse", &[s("http://[::1]:80/x")]),
        "map[fragment: host:[::1]:80 hostname:::1 opaque: path:/x query: scheme:http userinfo:]"
    );
    let join = |pairs: &[(&str, Value)]| v("urlJoin", &[d(pairs)]);
    assert_eq!(
        join(&[
            ("scheme", s("https")),
            ("host", s("h")),
            ("path", s("/a b")),
            ("query", s("q=1")),
            ("fragment", s("f"))
        ]),
        "https://h/a%20b?q=1#f"
    );
    assert_eq!(join(&[("path", s("a:b"))]), "./a:b");
    assert_eq!(
        join(&[("scheme", s("mailto")), ("opaque", s("x@y"))]),
        "mailto:x@y"
    );
    assert_eq!(
        join(&[("scheme", s("file")), ("path", s("/etc"))]),
        "file:///etc"
    );
    assert_eq!(
        err("urlParse", &[s(":x")]),
        "unable to parse url: parse \":x\": missing protocol scheme"
    );
    assert_eq!(
        err("urlJoin", &[d(&[("host", i(1))])]),
        "unable to parse host key, must be of type string, but int found"
    );
}

#[test]
fn encodings() {
    assert_eq!(
        v("b64dec", &[s("aGVsbG8")]),
        "illegal base64 data at input byte 4"
    );
    assert_eq!(v("b64dec", &[s("aGVs\nbG8=")]), "hello");
    assert_eq!(
        v("b64dec", &[s("aGVsbG8=x")]),
        "illegal base64 data at input byte 8"
    );
    assert_eq!(
        v("b64dec", &[s("a===")]),
        "illegal base64 data at input byte 1"
    );
    assert_eq!(
        v("b32dec", &[s("NBSWY3D")]),
        "illegal base32 data at input byte 0"
    );
    assert_eq!(
        v("b32dec", &[s("NBSWY3DP====")]),
        "illegal base32 data at input byte 8"
    );
    assert_eq!(
        v("b32dec", &[s("nbswy3dp")]),
        "illegal base32 data at input byte 0"
    );
    assert_eq!(v("adler32sum", &[s("hello")]), "103547413");
    assert_eq!(
        v("sha1sum", &[s("")]),
        "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    );
}

#[test]
fn regexes() {
    assert_eq!(
        v(
            "regexReplaceAll",
            &[s("(?P<w>\\w+)@(\\w+)"), s("a@b c@d"), s("${2}-$w-$1x-$$")]
        ),
        "b-a--$ d-c--$"
    );
    assert_eq!(
        v(
            "regexFindAll",
            &[s("\\bfoo\\b"), s("foo foobar foo"), i(-1)]
        ),
        "[foo foo]"
    );
    assert_eq!(
        v("regexSplit", &[s("\\s*,\\s*"), s("a , b,c"), i(2)]),
        "[a b,c]"
    );
    assert_eq!(v("regexMatch", &[s("^[[:alpha:]]+$"), s("abc")]), "true");
    assert_eq!(v("regexFindAll", &[s("."), s("héllo"), i(3)]), "[h é l]");
    assert_eq!(v("regexFindAll", &[s("a*"), s("baaab"), i(-1)]), "[ aaa ]");
    assert_eq!(
        v("regexReplaceAll", &[s("a*"), s("baaac"), s("X")]),
        "XbXcX"
    );
    assert_eq!(v("regexSplit", &[s(""), s("abc"), i(-1)]), "[a b c]");
    assert_eq!(
        err("mustRegexFind", &[s("*"), s("x")]),
        "error parsing regexp: missing argument to repetition operator: `*`"
    );
    assert_eq!(
        err("regexFind", &[s("a**"), s("x")]),
        "regexp: Compile(`a**`): error parsing regexp: invalid nested repetition operator: `**`"
    );
    assert_eq!(v("mustRegexFind", &[s("^*"), s("x")]), "");
}

#[test]
fn numbers() {
    assert_eq!(v("toDecimal", &[s("0777")]), "511");
    assert_eq!(v("toDecimal", &[i(777)]), "511");
    assert_eq!(v("toDecimal", &[s("0o17")]), "0");
    assert_eq!(v("int", &[s("1e3")]), "0");
    assert_eq!(v("int64", &[s("  5")]), "0");
    assert_eq!(v("float64", &[s("1_000.5")]), "1000.5");
    assert_eq!(v("int", &[s("0b101")]), "5");
    assert_eq!(v("int", &[s("-0x10")]), "-16");
    assert_eq!(v("atoi", &[s("+5")]), "5");
    assert_eq!(v("int", &[Value::Bool(true)]), "1");
    assert_eq!(v("float64", &[s("Inf")]), "+Inf");
    assert_eq!(v("int", &[s("1.0")]), "1");
    assert_eq!(v("int64", &[f(1e19)]), "-9223372036854775808");
    assert_eq!(v("round", &[f(2.5), i(0)]), "3");
    assert_eq!(v("round", &[f(-2.5), i(0)]), "-3");
    assert_eq!(v("round", &[f(1.2345), i(3), f(0.4)]), "1.235");
    assert_eq!(v("round", &[i(12345), i(-2)]), "12300");
    assert_eq!(v("round", &[f(2.675), i(2)]), "2.68");
    assert_eq!(v("divf", &[i(10), i(4)]), "2.5");
    assert_eq!(v("mulf", &[f(0.1), i(3)]), "0.3");
    assert_eq!(v("subf", &[f(0.3), f(0.1)]), "0.2");
    assert_eq!(v("divf", &[i(2), i(3)]), "0.6666666666666667");
    assert_eq!(v("addf", &[f(1e20), i(1)]), "1e+20");
    assert_eq!(v("addf", &[f(0.1), f(0.2)]), "0.3");
    assert_eq!(v("maxf", &[i(1), n(), s("3")]), "3");
    assert_eq!(v("minf", &[i(2)]), "2");
    assert_eq!(v("add", &[f(0.5), f(0.5)]), "0");
    assert_eq!(v("div", &[i(7), i(2)]), "3");
    assert_eq!(v("int", &[s("010")]), "8");
    assert_eq!(v("seq", &[i(1), i(2), i(10)]), "1 3 5 7 9");
    assert_eq!(v("seq", &[i(10), i(-3), i(1)]), "10 7 4 1");
    assert_eq!(v("seq", &[i(-1)]), "1 0 -1");
    assert_eq!(v("seq", &[i(5), i(5)]), "5");
    assert_eq!(v("seq", &[i(3)]), "1 2 3");
    assert_eq!(v("until", &[i(0)]), "[]");
    assert_eq!(v("until", &[i(3)]), "[0 1 2]");
    assert_eq!(v("untilStep", &[i(5), i(0), i(-2)]), "[5 3 1]");
    assert_eq!(v("untilStep", &[i(0), i(5), i(0)]), "[]");
    assert_eq!(
        err("div", &[i(1), i(0)]),
        "runtime error: integer divide by zero"
    );
}

#[test]
fn paths_lists_dicts() {
    assert_eq!(v("base", &[s("a/b/")]), "b");
    assert_eq!(v("dir", &[s("a/b/")]), "a/b");
    assert_eq!(v("clean", &[s("a/../../b")]), "../b");
    assert_eq!(v("ext", &[s("x.tar.gz")]), ".gz");
    assert_eq!(v("osBase", &[s("")]), ".");
    assert_eq!(v("dir", &[s("")]), ".");
    assert_eq!(v("clean", &[s("//a//b")]), "/a/b");
    assert_eq!(
        v("deepEqual", &[l(vec![i(1), i(2)]), l(vec![i(1), i(2)])]),
        "true"
    );
    assert_eq!(
        v("deepEqual", &[d(&[("a", i(1))]), d(&[("a", i(1))])]),
        "true"
    );
    assert_eq!(v("deepEqual", &[i(1), f(1.0)]), "false");
    assert_eq!(
        err("first", &[n()]),
        "runtime error: invalid memory address or nil pointer dereference"
    );
    assert_eq!(
        err("first", &[s("abc")]),
        "Cannot find first on type string"
    );
    assert_eq!(
        err("chunk", &[i(0), l(vec![i(1), i(2)])]),
        "runtime error: makeslice: len out of range"
    );
    assert_eq!(
        err("concat", &[l(vec![i(1)]), n()]),
        "runtime error: invalid memory address or nil pointer dereference"
    );
    assert_eq!(
        err("slice", &[l(vec![i(1), i(2), i(3)]), i(2), i(1)]),
        "reflect.Value.Slice: slice index out of bounds"
    );
    assert_eq!(
        v("mergeOverwrite", &[d(&[("a", s("x"))]), d(&[("a", s(""))])]),
        "map[a:]"
    );
    assert_eq!(
        v(
            "mergeOverwrite",
            &[d(&[("a", l(vec![i(1)]))]), d(&[("a", l(vec![]))])]
        ),
        "map[a:[]]"
    );
    assert_eq!(
        v(
            "merge",
            &[
                d(&[("a", l(vec![i(1)]))]),
                d(&[("a", l(vec![i(2)])), ("b", l(vec![i(3)]))])
            ]
        ),
        "map[a:[1] b:[3]]"
    );
    assert_eq!(
        v("merge", &[d(&[]), d(&[("a", l(vec![i(2)]))])]),
        "map[a:[2]]"
    );
    assert_eq!(
        v(
            "merge",
            &[
                d(&[("a", Value::Bool(false)), ("b", s("")), ("d", s("keep"))]),
                d(&[
                    ("a", Value::Bool(true)),
                    ("b", s("x")),
                    ("d", s("new")),
                    ("e", i(1))
                ])
            ]
        ),
        "map[a:true b:x d:keep e:1]"
    );
}

/// The values of the chart these cases ran against (`n` and `y` are YAML
/// 1.1 booleans as keys, so `.Values.n` was missing: nil).
fn values() -> Value {
    d(&[
        ("big", f(1000000.0)),
        ("f", f(1.7)),
        ("l", l(vec![f(1.0), f(2.5), s("a"), n(), Value::Bool(true)])),
        ("m", d(&[("b", f(1.0)), ("a", d(&[("c", f(2.0))]))])),
        ("e", d(&[])),
        ("nested", d(&[("x", d(&[("true", f(1.0))]))])),
        ("s", s("hello")),
    ])
}

fn at(path: &str) -> Value {
    let mut cur = values();
    for k in path.split('.') {
        cur = match &cur {
            Value::Map(m) => m.get(k).unwrap_or_default(),
            _ => Value::Nil,
        };
    }
    cur
}

#[test]
fn with_values() {
    assert_eq!(v("join", &[s(","), at("l")]), "1,2.5,a,true");
    assert_eq!(v("toStrings", &[at("l")]), "[1 2.5 a true]");
    assert_eq!(v("sortAlpha", &[at("l")]), "[1 2.5 a true]");
    assert_eq!(v("quote", &[at("f"), at("big")]), "\"1.7\" \"1e+06\"");
    assert_eq!(v("toString", &[at("big")]), "1e+06");
    assert_eq!(v("toString", &[at("l")]), "[1 2.5 a <nil> true]");
    assert_eq!(v("squote", &[at("big")]), "'1e+06'");
    assert_eq!(v("add1", &[at("f")]), "2");
    assert_eq!(v("add", &[at("f"), at("n")]), "1");
    assert_eq!(v("addf", &[at("f"), at("n")]), "1.7");
    assert_eq!(v("mul", &[at("f"), i(2)]), "2");
    assert_eq!(v("max", &[at("f"), i(1)]), "1");
    assert_eq!(v("floor", &[at("f")]), "1");
    assert_eq!(v("toDecimal", &[at("n")]), "0");
    assert_eq!(v("int", &[at("big")]), "1000000");
    assert_eq!(v("float64", &[at("n")]), "0");
    assert_eq!(
        v("toPrettyJson", &[at("m")]),
        "{\n  \"a\": {\n    \"c\": 2\n  },\n  \"b\": 1\n}"
    );
    assert_eq!(v("dig", &[s("x"), s("y"), s("def"), at("nested")]), "def");
    assert_eq!(v("dig", &[s("x"), s("true"), s("def"), at("nested")]), "1");
    assert_eq!(v("pluck", &[s("a"), at("m"), at("nested")]), "[map[c:2]]");
    assert_eq!(v("omit", &[at("m"), s("a")]), "map[b:1]");
    assert_eq!(v("pick", &[at("m"), s("a")]), "map[a:map[c:2]]");
    assert_eq!(v("has", &[f(1.0), at("l")]), "true");
    assert_eq!(v("has", &[i(1), at("l")]), "false");
    assert_eq!(v("without", &[at("l"), n(), f(1.0)]), "[2.5 a true]");
    assert_eq!(v("first", &[at("l")]), "1");
    assert_eq!(v("last", &[at("l")]), "true");
    assert_eq!(v("rest", &[at("l")]), "[2.5 a <nil> true]");
    assert_eq!(v("initial", &[at("l")]), "[1 2.5 a <nil>]");
    assert_eq!(v("reverse", &[at("l")]), "[true <nil> a 2.5 1]");
    assert_eq!(v("compact", &[at("l")]), "[1 2.5 a true]");
    let twice = call("concat", &[at("l"), at("l")]).unwrap_or_default();
    assert_eq!(v("uniq", &[twice]), "[1 2.5 a <nil> true]");
    assert_eq!(v("empty", &[at("e")]), "true");
    assert_eq!(v("empty", &[at("m")]), "false");
    assert_eq!(v("coalesce", &[at("e"), at("zz"), at("s")]), "hello");
    assert_eq!(v("default", &[s("d"), at("e")]), "d");
    assert_eq!(v("all", &[at("s"), at("n")]), "false");
    assert_eq!(v("any", &[at("e"), i(0)]), "false");
}

#[test]
fn more_functions() {
    assert_eq!(v("trimAll", &[s("$-"), s("$-a-$")]), "a");
    assert_eq!(v("trimSuffix", &[s("-x"), s("a-x")]), "a");
    assert_eq!(v("trimPrefix", &[s("x"), s("xxa")]), "xa");
    assert_eq!(v("trim", &[s("  a\t\n")]), "a");
    assert_eq!(v("b64enc", &[s("héllo")]), "aMOpbGxv");
    assert_eq!(v("plural", &[s("one"), s("many"), i(0)]), "many");
    assert_eq!(
        v("regexReplaceAllLiteral", &[s("l+"), s("hello"), s("$1")]),
        "he$1o"
    );
    assert_eq!(v("regexFind", &[s("[0-9]+"), s("abc123def456")]), "123");
    assert_eq!(v("regexMatch", &[s("(?i)HELLO"), s("hello")]), "true");
    assert_eq!(v("regexSplit", &[s(","), s("a,b,,c"), i(-1)]), "[a b  c]");
    assert_eq!(v("mustRegexSplit", &[s("x"), s(""), i(1)]), "[]");
    assert_eq!(v("regexFindAll", &[s("a"), s("aaa"), i(0)]), "[]");
    assert_eq!(v("regexQuoteMeta", &[s("a.b*c[d]")]), "a\\.b\\*c\\[d\\]");
    assert_eq!(v("toJson", &[l(vec![i(1), s("a")])]), "[1,\"a\"]");
    assert_eq!(
        v(
            "toJson",
            &[call("dict", &[s("a"), i(1), s("b")]).unwrap_or_default()]
        ),
        "{\"a\":1,\"b\":\"\"}"
    );
    assert_eq!(v("set", &[d(&[]), s("k"), s("v")]), "map[k:v]");
    assert_eq!(
        v("unset", &[d(&[("a", i(1)), ("b", i(2))]), s("a")]),
        "map[b:2]"
    );
    assert_eq!(
        v("chunk", &[i(2), l(vec![i(1), i(2), i(3), i(4), i(5)])]),
        "[[1 2] [3 4] [5]]"
    );
    assert_eq!(
        v("slice", &[l(vec![i(1), i(2), i(3), i(4)]), i(1), i(3)]),
        "[2 3]"
    );
    assert!(call("slice", &[l(vec![])]).is_ok_and(|v| v.is_nil()));
    assert_eq!(v("rest", &[l(vec![])]), "[]");
    assert_eq!(v("toRawJson", &[s("\u{1}<")]), "\"\\u0001<\"");
    assert_eq!(v("toPrettyJson", &[l(vec![])]), "[]");
    assert_eq!(v("toPrettyJson", &[n()]), "null");
    assert_eq!(
        v(
            "mergeOverwrite",
            &[
                d(&[("a", d(&[("b", i(1)), ("c", i(2))]))]),
                d(&[("a", d(&[("b", i(3))]))]),
                d(&[("d", n())])
            ]
        ),
        "map[a:map[b:3 c:2] d:<nil>]"
    );
    assert_eq!(
        v("merge", &[d(&[("a", n())]), d(&[("a", i(5))])]),
        "map[a:5]"
    );
    assert_eq!(
        v(
            "merge",
            &[d(&[("a", d(&[]))]), d(&[("a", d(&[("x", i(1))]))])]
        ),
        "map[a:map[x:1]]"
    );
    assert_eq!(
        v(
            "merge",
            &[d(&[("a", s("s"))]), d(&[("a", d(&[("x", i(1))]))])]
        ),
        "map[a:s]"
    );
    assert_eq!(
        v(
            "mergeOverwrite",
            &[d(&[("a", s("s"))]), d(&[("a", d(&[("x", i(1))]))])]
        ),
        "map[a:map[x:1]]"
    );
    assert_eq!(v("indent", &[i(2), s("a\nb\n")]), "  a\n  b\n  ");
    assert_eq!(v("nindent", &[i(2), s("")]), "\n  ");
    assert_eq!(v("cat", &[]), "");
    assert_eq!(v("quote", &[]), "");
    assert_eq!(v("join", &[s("-"), s("abc")]), "abc");
    assert_eq!(v("join", &[s("-"), n()]), "");
    assert_eq!(v("toStrings", &[s("x")]), "[x]");
    assert_eq!(v("toStrings", &[n()]), "[]");
    assert_eq!(
        v("sha256sum", &[s("héllo")]),
        "3c48591d8d098a4538f5e013dfcf406e948eac4d3277b10bf614e295d6068179"
    );
    assert_eq!(v("b32enc", &[s("héllo")]), "NDB2S3DMN4======");
    assert_eq!(v("b32dec", &[s("NDB2S3DMN4======")]), "héllo");
    let cmp = |c: &str, ver: &str| v("semverCompare", &[s(c), s(ver)]);
    assert_eq!(cmp(">=1.2.3", "v1.2.3"), "true");
    assert_eq!(cmp("~0", "0.9.9"), "true");
    assert_eq!(cmp("^1.2.3-beta", "1.2.3-beta.2"), "true");
    assert_eq!(cmp(">= 1.2, < 1.3", "1.2.99"), "true");
    assert_eq!(cmp("1.2.3", "1.2.3+meta"), "true");
    assert_eq!(cmp("=1.2.3-alpha", "1.2.3-alpha"), "true");
    assert_eq!(cmp("<=1.2.3-0", "1.2.3-alpha"), "false");
    assert_eq!(cmp("~1.2.3-beta.2", "1.2.4-beta.1"), "true");
    assert_eq!(cmp("> 1.0 < 2.0", "1.5"), "true");
    assert_eq!(cmp("1.x || >=3.0", "2.0.0"), "false");
    assert_eq!(v("getHostByName", &[s("localhost")]), "");
    assert_eq!(v("hello", &[]), "Hello!");
    assert_eq!(v("kindOf", &[f(1.5)]), "float64");
}

#[test]
fn replacement_templates() {
    let r = |pat: &str, repl: &str| v("regexReplaceAll", &[s(pat), s("xax"), s(repl)]);
    assert_eq!(r("(a)", "[${1]"), "x[${1]x");
    assert_eq!(r("(a)", "[$ ]"), "x[$ ]x");
    assert_eq!(r("(a)", "[${}]"), "x[${}]x");
    assert_eq!(r("(a)", "[$1$2$10]"), "x[a]x");
    assert_eq!(r("(?P<n>a)", "[${n}$n_]"), "x[a]x");
    assert_eq!(r("(a)", "[$"), "x[$x");
}

#[test]
fn unicode_simple_case_mapping() {
    let one = |f: &str, x: &str| v(f, &[s(x)]);
    assert_eq!(one("upper", "ა"), "\u{1c90}");
    assert_eq!(one("title", "ა"), "ა");
    assert_eq!(one("lower", "\u{1c90}"), "ა");
    assert_eq!(one("upper", "ﬀ"), "ﬀ");
    assert_eq!(one("upper", "ᾳ"), "\u{1fbc}");
    assert_eq!(one("title", "ᾳ"), "\u{1fbc}");
    assert_eq!(one("upper", "ŉ"), "ŉ");
    assert_eq!(one("lower", "İ"), "i");
    assert_eq!(one("upper", "ı"), "I");
    assert_eq!(one("lower", "\u{212a}"), "k");
    assert_eq!(one("upper", "ǅ"), "Ǆ");
    assert_eq!(one("lower", "ǅ"), "ǆ");
}

#[test]
fn string_edge_cases() {
    assert_eq!(v("abbrev", &[i(3), s("abcdef")]), "abcdef");
    assert_eq!(v("trunc", &[i(0), s("abc")]), "");
    assert_eq!(v("substr", &[i(0), i(0), s("abc")]), "");
    assert_eq!(v("wrap", &[i(0), s("a b")]), "a\nb");
    assert_eq!(v("wrapWith", &[i(0), s(""), s("ab cd")]), "a\nb\nc\nd");
    assert_eq!(v("wrap", &[i(4), s("  ab  cd  ")]), "ab \ncd  ");
    assert_eq!(v("initials", &[s("  a  b ")]), "ab");
    assert_eq!(v("nospace", &[s("")]), "");
    assert_eq!(v("swapcase", &[s("")]), "");
    assert_eq!(v("title", &[s("")]), "");
    assert_eq!(v("snakecase", &[s("")]), "");
    assert_eq!(v("camelcase", &[s("-")]), "--");
    assert_eq!(v("kebabcase", &[s("A")]), "a");
    assert_eq!(v("snakecase", &[s("ABC")]), "abc");
    assert_eq!(v("snakecase", &[s("aB")]), "a_b");
    assert_eq!(v("snakecase", &[s("a1B2")]), "a1_b2");
    assert_eq!(v("snakecase", &[s("Hello, World!")]), "hello,_world!");
    assert_eq!(v("kebabcase", &[s("foo--bar")]), "foo--bar");
    assert_eq!(v("camelcase", &[s("foo--bar")]), "Foo-Bar");
    assert_eq!(v("camelcase", &[s("foo bar_")]), "FooBar_");
}

#[test]
fn json_numbers_and_joins() {
    assert_eq!(
        v(
            "toJson",
            &[l(vec![
                f(-0.0),
                f(1e-6),
                i(123456789012345678),
                f(0.1),
                i(100),
                f(1e100)
            ])]
        ),
        "[-0,0.000001,123456789012345678,0.1,100,1e+100]"
    );
    assert_eq!(v("join", &[s(","), d(&[("a", i(1))])]), "map[a:1]");
    assert_eq!(v("toJson", &[d(&[("z", s("éé\t"))])]), "{\"z\":\"éé\\t\"}");
}

#[test]
fn url_edge_cases() {
    let p = |u: &str| v("toJson", &[call("urlParse", &[s(u)]).unwrap_or_default()]);
    let obj = |frag: &str,
               host: &str,
               hostname: &str,
               path: &str,
               query: &str,
               scheme: &str,
               user: &str| {
        format!(
            "{{\"fragment\":\"{frag}\",\"host\":\"{host}\",\"hostname\":\"{hostname}\",\"opaque\":\"\",\"path\":\"{path}\",\"query\":\"{query}\",\"scheme\":\"{scheme}\",\"userinfo\":\"{user}\"}}"
        )
    };
    assert_eq!(p("//host/p"), obj("", "host", "host", "/p", "", "", ""));
    assert_eq!(p("http:/x"), obj("", "", "", "/x", "", "http", ""));
    assert_eq!(p("http://u@h"), obj("", "h", "h", "", "", "http", "u"));
    assert_eq!(
        p("HTTP://H/é?q=é#é"),
        obj("é", "H", "H", "/é", "q=é", "http", "")
    );
    assert_eq!(
        p("http://[::1]/"),
        obj("", "[::1]", "::1", "/", "", "http", "")
    );
    assert_eq!(p("x?"), obj("", "", "", "x", "", "", ""));
    assert_eq!(p(""), obj("", "", "", "", "", "", ""));
    assert_eq!(
        v("urlParse", &[s("a/b:c")]),
        "map[fragment: host: hostname: opaque: path:a/b:c query: scheme: userinfo:]"
    );
    let e = |u: &str| err("urlParse", &[s(u)]);
    assert_eq!(
        e("http://h/%zz"),
        "unable to parse url: parse \"http://h/%zz\": invalid URL escape \"%zz\""
    );
    assert_eq!(
        e("http://h%41/"),
        "unable to parse url: parse \"http://h%41/\": invalid URL escape \"%41\""
    );
    assert_eq!(
        e("http://a b/"),
        "unable to parse url: parse \"http://a b/\": invalid character \" \" in host name"
    );
    assert_eq!(
        e("http://h/\t"),
        "unable to parse url: parse \"http://h/\\t\": net/url: invalid control character in URL"
    );
    let j = |pairs: &[(&str, Value)]| v("urlJoin", &[d(pairs)]);
    assert_eq!(
        j(&[
            ("scheme", s("http")),
            ("host", s("h")),
            ("userinfo", s("a:c"))
        ]),
        "http://a:c@h"
    );
    assert_eq!(j(&[("host", s("h")), ("path", s("p"))]), "//h/p");
    assert_eq!(
        j(&[("scheme", s("http")), ("host", s("é h"))]),
        "http://%C3%A9%20h"
    );
    assert_eq!(
        j(&[("path", s("/a?b")), ("fragment", s("x y#"))]),
        "/a%3Fb#x%20y%23"
    );
    assert_eq!(j(&[]), "");
    assert_eq!(j(&[("scheme", s("http")), ("path", s("a"))]), "http://a");
    assert_eq!(
        j(&[
            ("scheme", s("http")),
            ("host", s("h")),
            ("userinfo", s("a%20b:c%40d"))
        ]),
        "http://a%20b:c%40d@h"
    );
    assert_eq!(
        err(
            "urlJoin",
            &[d(&[
                ("scheme", s("http")),
                ("host", s("h")),
                ("userinfo", s("a b:c@d"))
            ])]
        ),
        "unable to parse userinfo in dict: parse \"proto://a b:c@d@host\": net/url: invalid userinfo"
    );
}
