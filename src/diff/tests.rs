//! The comparison and its printing, on small inline manifests.

use super::*;

fn src(origin: &str, text: &str) -> Source {
    Source::new(format!("side/{origin}"), origin, text)
}

fn opts() -> CompareOptions {
    CompareOptions {
        default_namespace: "web".into(),
        show_secrets: false,
    }
}

fn plain(r: &DiffResult) -> String {
    render(r, &RenderOptions::default())
}

const DEPLOY: &str = "\
# Source: echo/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: echo
        image: echo:1.0
";

#[test]
fn formatting_comments_and_key_order_are_not_changes() {
    let reformatted = "\
kind: Deployment
apiVersion: \"apps/v1\"
metadata: {name: echo}
spec:
  template:
    spec:
      containers:
        - image: 'echo:1.0'
          name: echo
  replicas: 1.0
";
    let r = compare(&[src("a", DEPLOY)], &[src("a", reformatted)], &opts()).unwrap();
    assert!(!r.has_differences(), "{r:?}");
    assert_eq!(r.unchanged, 1);
    assert_eq!(plain(&r), "0 added, 0 removed, 0 changed, 1 unchanged\n");
}

#[test]
fn a_changed_object_gets_a_unified_diff_under_its_header() {
    let new = DEPLOY.replace("replicas: 1", "replicas: 2");
    let r = compare(&[src("a", DEPLOY)], &[src("a", &new)], &opts()).unwrap();
    assert_eq!(r.count(Change::Changed), 1);
    assert_eq!(
        plain(&r),
        "\
~ apps/v1 Deployment web/echo (a)
@@ -3,7 +3,7 @@
 metadata:
   name: echo
 spec:
-  replicas: 1
+  replicas: 2
   template:
     spec:
       containers:

0 added, 0 removed, 1 changed, 0 unchanged
"
    );
}

#[test]
fn context_option_sets_the_hunk_size() {
    let new = DEPLOY.replace("replicas: 1", "replicas: 2");
    let r = compare(&[src("a", DEPLOY)], &[src("a", &new)], &opts()).unwrap();
    let o = RenderOptions {
        context: 0,
        ..Default::default()
    };
    assert_eq!(
        render(&r, &o),
        "~ apps/v1 Deployment web/echo (a)\n@@ -6 +6 @@\n-  replicas: 1\n+  replicas: 2\n\n\
         0 added, 0 removed, 1 changed, 0 unchanged\n"
    );
}

#[test]
fn added_and_removed_objects_are_shown_whole_in_a_stable_order() {
    let old = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\ndata:\n  a: x\n";
    let new = "\
apiVersion: v1
kind: Service
metadata:
  name: b
---
apiVersion: v1
kind: Namespace
metadata:
  name: web
";
    let r = compare(&[src("m", old)], &[src("m", new)], &opts()).unwrap();
    assert_eq!(
        plain(&r),
        "\
- v1 ConfigMap web/gone (m)
-apiVersion: v1
-data:
-  a: x
-kind: ConfigMap
-metadata:
-  name: gone

+ v1 Namespace web (m)
+apiVersion: v1
+kind: Namespace
+metadata:
+  name: web

+ v1 Service web/b (m)
+apiVersion: v1
+kind: Service
+metadata:
+  name: b

2 added, 1 removed, 0 changed, 0 unchanged
"
    );
}

#[test]
fn namespace_defaults_only_for_namespaced_kinds() {
    let old = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: web
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  scope: Cluster
  names:
    kind: Widget
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
";
    // Same objects, the ConfigMap now relying on -n.
    let new = old.replace("  namespace: web\n", "");
    let r = compare(&[src("m", old)], &[src("m", &new)], &opts()).unwrap();
    let keys: Vec<String> = r.entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(keys, vec!["v1 ConfigMap web/c"]);
    assert_eq!(r.unchanged, 2);
    let widget = compare(&[], &[src("m", &new)], &opts()).unwrap();
    let keys: Vec<String> = widget.entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(
        keys,
        vec![
            "apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com",
            "example.com/v1 Widget w",
            "v1 ConfigMap web/c",
        ]
    );
}

#[test]
fn documents_without_kind_or_name_are_keyed_by_position() {
    let r = compare(
        &[src("notes.yaml", "a: 1\n---\nb: 2\n")],
        &[src("notes.yaml", "a: 1\n---\nb: 3\n")],
        &opts(),
    )
    .unwrap();
    assert_eq!(r.unchanged, 1);
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].key.to_string(), "notes.yaml document 2");
}

#[test]
fn objects_match_across_files_and_sort_by_origin() {
    let cm = |name: &str, v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: {v}\n")
    };
    let old = [
        src("b.yaml", &cm("one", "1")),
        src("a.yaml", &cm("two", "1")),
    ];
    // "one" moved to a.yaml, unchanged; "two" changed in b.yaml.
    let new = [
        src("a.yaml", &cm("one", "1")),
        src("b.yaml", &cm("two", "2")),
    ];
    let r = compare(&old, &new, &opts()).unwrap();
    assert_eq!(r.unchanged, 1);
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].origin, "b.yaml");
}

#[test]
fn module_headers_in_a_stream_name_the_module() {
    let stream = |img: &str| {
        format!(
            "# module: echo\n---\n# Source: echo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n\
             metadata:\n  name: echo\ndata:\n  image: {img}\n"
        )
    };
    let r = compare(
        &[src("out.yaml", &stream("a"))],
        &[src("out.yaml", &stream("b"))],
        &opts(),
    )
    .unwrap();
    assert_eq!(r.entries[0].origin, "module echo");
    assert!(plain(&r).starts_with("~ v1 ConfigMap web/echo (module echo)\n"));
}

#[test]
fn parse_errors_name_the_file_document_and_line() {
    let bad = "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  bad: a: b\n";
    let err = compare(&[], &[src("t.yaml", bad)], &opts()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "side/t.yaml: document 2: yaml: line 8: mapping values are not allowed in this context"
    );
}

#[test]
fn colour_codes_only_when_asked() {
    let new = DEPLOY.replace("replicas: 1", "replicas: 2");
    let r = compare(&[src("a", DEPLOY)], &[src("a", &new)], &opts()).unwrap();
    assert!(!plain(&r).contains('\x1b'));
    let coloured = render(
        &r,
        &RenderOptions {
            color: true,
            ..Default::default()
        },
    );
    assert!(coloured.contains("\x1b[31m-  replicas: 1\x1b[0m\n"));
    assert!(coloured.contains("\x1b[32m+  replicas: 2\x1b[0m\n"));
    assert!(coloured.starts_with("\x1b[1m\x1b[33m~ apps/v1 Deployment web/echo (a)\x1b[0m\n"));
}

#[test]
fn markdown_has_a_table_and_fenced_diff_blocks() {
    let new = DEPLOY.replace("replicas: 1", "replicas: 2");
    let r = compare(&[src("a", DEPLOY)], &[src("a", &new)], &opts()).unwrap();
    let md = render(
        &r,
        &RenderOptions {
            format: Format::Markdown,
            context: 1,
            color: true,
        },
    );
    assert_eq!(
        md,
        "\
### antiopa diff

0 added, 0 removed, 1 changed, 0 unchanged

| | object | source |
|---|---|---|
| ~ changed | `apps/v1 Deployment web/echo` | a |

#### ~ `apps/v1 Deployment web/echo` (a)

```diff
@@ -5,3 +5,3 @@
 spec:
-  replicas: 1
+  replicas: 2
   template:
```
"
    );
    let same = compare(&[src("a", DEPLOY)], &[src("a", DEPLOY)], &opts()).unwrap();
    assert_eq!(
        render(
            &same,
            &RenderOptions {
                format: Format::Markdown,
                ..Default::default()
            }
        ),
        "### antiopa diff\n\nNo differences. 0 added, 0 removed, 0 changed, 1 unchanged\n"
    );
}

#[test]
fn duplicate_keys_pair_by_origin_first() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let old = [src("a", cm), src("b", cm)];
    let new = [src("b", cm)];
    let r = compare(&old, &new, &opts()).unwrap();
    assert_eq!(r.unchanged, 1);
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].change, Change::Removed);
    assert_eq!(r.entries[0].origin, "a");
}

#[test]
fn list_documents_stand_for_their_items() {
    let list = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b}
";
    let single = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
    let r = compare(&[src("m", single)], &[src("m", list)], &opts()).unwrap();
    assert_eq!(r.unchanged, 1);
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.entries[0].key.to_string(), "v1 ConfigMap web/b");
}

#[test]
fn big_integers_keep_their_digits() {
    let a =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nspec:\n  count: 9007199254740993\n";
    let b = a.replace("993", "992");
    let r = compare(&[src("m", a)], &[src("m", &b)], &opts()).unwrap();
    assert_eq!(r.count(Change::Changed), 1);
    assert!(
        plain(&r).contains("-  count: 9007199254740993\n+  count: 9007199254740992\n"),
        "{}",
        plain(&r)
    );
}
