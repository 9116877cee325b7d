//! Render limits at work: templates that would exhaust memory or run
//! forever (a `tpl` of itself, output doubled in nested ranges, `repeat`,
//! `until` and friends with huge counts) end with an error naming the
//! template and the limit; without limits, output is unchanged.

use std::sync::Arc;
use std::time::Duration;

use super::funcs::{Env, FuncMap};
use super::limits::Limits;
use super::value::Value;
use super::{Error, Templates};

const MIB: u64 = 1 << 20;

fn render(src: &str, limits: Limits) -> Result<String, Error> {
    let mut t = Templates::new(Arc::new(FuncMap::standard()));
    t.parse("c/templates/t.yaml", src)?;
    let mut env = Env::new();
    env.set_limits(limits);
    env.begin_render();
    t.execute("c/templates/t.yaml", &Value::str("x"), &env)
}

fn limited(src: &str) -> String {
    let limits = Limits {
        max_output: Some(MIB),
        max_depth: Some(50),
        timeout: Some(Duration::from_secs(20)),
    };
    match render(src, limits) {
        Ok(out) => panic!("rendered {} bytes", out.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tpl_of_itself_stops_at_the_depth_limit() {
    let e = limited(r#"{{ $t := "{{ tpl . . }}" }}{{ tpl $t $t }}"#);
    assert!(e.starts_with("template: c/templates/t.yaml:1:"), "{e}");
    assert!(
        e.contains("rendering exceeded the include/tpl nesting limit of 50"),
        "{e}"
    );
}

#[test]
fn include_recursion_stops_at_a_configured_depth() {
    let src = r#"{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}"#;
    let e = limited(src);
    assert!(e.contains("error calling include"), "{e}");
    assert!(
        e.ends_with("rendering exceeded the include/tpl nesting limit of 50"),
        "{e}"
    );
    // Without limits, Helm's own rule and text.
    let e = render(src, Limits::default()).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "rendering template has a nested reference name: r: unable to execute template"
        ),
        "{e}"
    );
}

#[test]
fn nested_ranges_doubling_output_stop_at_the_output_limit() {
    let mut src = String::from("x");
    for _ in 0..40 {
        src = format!("{{{{ range list 1 2 }}}}{src}{{{{ end }}}}");
    }
    let e = limited(&src);
    assert!(e.starts_with("template: c/templates/t.yaml:1:"), "{e}");
    assert!(
        e.ends_with("rendering exceeded the output limit of 1 MiB"),
        "{e}"
    );
}

#[test]
fn a_string_doubled_in_a_variable_stops_at_the_call_that_makes_it_too_long() {
    let e =
        limited(r#"{{ $s := "x" }}{{ range until 40 }}{{ $s = cat $s $s }}{{ end }}{{ len $s }}"#);
    assert!(
        e.contains("executing \"c/templates/t.yaml\" at <cat $s $s>"),
        "{e}"
    );
    assert!(
        e.ends_with("rendering exceeded the output limit of 1 MiB"),
        "{e}"
    );
}

#[test]
fn functions_check_before_they_allocate() {
    for (src, func) in [
        (r#"{{ repeat 2000000000 "x" }}"#, "repeat"),
        (r#"{{ until 1000000000 | len }}"#, "until"),
        (r#"{{ untilStep 0 1000000000 1 | len }}"#, "untilStep"),
        (r#"{{ seq 1000000000 | len }}"#, "seq"),
        (r#"{{ randAlphaNum 1000000000 | len }}"#, "randAlphaNum"),
        (r#"{{ randBytes 1000000000 | len }}"#, "randBytes"),
        (r#"{{ "a\nb\nc" | indent 1000000000 | len }}"#, "indent"),
        (r#"{{ "a\nb" | nindent 1000000000 | len }}"#, "nindent"),
        (
            r#"{{ $s := repeat 100000 "x" }}{{ replace "" $s $s | len }}"#,
            "replace",
        ),
        (
            r#"{{ $s := repeat 100000 "x" }}{{ regexReplaceAll "" $s $s | len }}"#,
            "regexReplaceAll",
        ),
        (
            r#"{{ $s := repeat 100000 "x" }}{{ $l := list }}{{ range until 20 }}{{ $l = append $l $s }}{{ end }}{{ join "" $l | len }}"#,
            "join",
        ),
    ] {
        let e = limited(src);
        assert!(
            e.contains(&format!(
                "error calling {func}: rendering exceeded the output limit of 1 MiB"
            )),
            "{func}: {e}"
        );
    }
}

#[test]
fn what_fits_renders_as_without_limits() {
    for src in [
        r#"{{ repeat 1000 "x" | len }}"#,
        r#"{{ until 1000 | len }}"#,
        r#"{{ seq 5 }} {{ seq 9223372036854775807 9223372036854775807 }}"#,
        r#"{{ "a\nb" | nindent 4 }}"#,
        r#"{{ replace "a" "bb" "aaa" }} {{ regexReplaceAll "a" "aaa" "$0$0" }}"#,
        r#"{{ join "," (list 1 2 3) }}"#,
        r#"{{ define "x" }}{{ tpl "{{ . }}" . }}{{ end }}{{ include "x" . }}"#,
    ] {
        assert_eq!(
            render(src, Limits::operator()).expect("renders"),
            render(src, Limits::default()).expect("renders"),
            "{src}"
        );
    }
}

#[test]
fn a_render_past_its_deadline_stops() {
    let src = r#"{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}"#;
    let limits = Limits {
        timeout: Some(Duration::from_millis(100)),
        ..Limits::default()
    };
    let started = std::time::Instant::now();
    let e = render(src, limits).unwrap_err().to_string();
    assert!(e.ends_with("rendering took longer than 100ms"), "{e}");
    assert!(e.starts_with("template: c/templates/t.yaml:1:"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_output_count_is_per_render() {
    let mut t = Templates::new(Arc::new(FuncMap::standard()));
    t.parse("t", r#"{{ repeat 600 "x" }}"#).unwrap();
    let mut env = Env::new();
    env.set_limits(Limits {
        max_output: Some(1000),
        ..Limits::default()
    });
    env.begin_render();
    assert!(t.execute("t", &Value::Nil, &env).is_ok());
    assert!(t.execute("t", &Value::Nil, &env).is_err());
    env.begin_render();
    assert!(t.execute("t", &Value::Nil, &env).is_ok());
}

#[test]
fn values_sharing_parts_stop_before_they_are_written_out() {
    let build = r#"{{ $l := list 1 }}{{ range until 40 }}{{ $l = list $l $l }}{{ end }}"#;
    for (out, func) in [
        ("{{ $l }}", None),
        ("{{ toJson $l }}", Some("toJson")),
        ("{{ printf \"%v\" $l }}", Some("printf")),
        ("{{ toString $l }}", Some("toString")),
        ("{{ deepCopy $l | len }}", Some("deepCopy")),
    ] {
        let e = limited(&format!("{build}{out}"));
        assert!(
            e.ends_with("rendering exceeded the output limit of 1 MiB"),
            "{out}: {e}"
        );
        if let Some(f) = func {
            assert!(e.contains(&format!("error calling {f}: ")), "{out}: {e}");
        }
    }
}
