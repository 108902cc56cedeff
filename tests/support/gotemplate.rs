//! Go's text/template, as argocd-notifications executes templates, two ways:
//!
//! - [`render_go_template`]: `gtmpl` (a Rust implementation of text/template) with the Sprig
//!   functions the templates call, written after Sprig's Go source. Fast, always there.
//! - [`GoRenderer`]: real Go. `tests/go/notifications-render` built with the machine's Go and
//!   Debian's Sprig (`golang-go`, `golang-github-masterminds-sprig-dev`; `scripts/go-env.sh`
//!   installs them, `make test` calls it). It tells when the Rust copy drifts from Go (gtmpl has
//!   had no release since 2021, and the Sprig functions above are ours).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gtmpl::{Context, Func, FuncError, Template, Value};
use serde_json::Value as Json;

/// Executes Go text/template source with the Sprig functions below.
pub fn render_go_template(text: &str, vars: &Json) -> Result<String, String> {
    let mut template = Template::default();
    template.add_funcs(SPRIG);
    template.parse(text).map_err(|e| format!("parse error: {e}"))?;
    template.render(&Context::from(to_gtmpl(vars))).map_err(|e| format!("execution error: {e}"))
}

/// JSON as the Go side holds it: objects are maps (a missing key reads as no value), null is nil.
pub fn to_gtmpl(value: &Json) -> Value {
    match value {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().expect("a JSON number")),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_gtmpl).collect()),
        Json::Object(map) => Value::Map(map.iter().map(|(k, v)| (k.clone(), to_gtmpl(v))).collect()),
    }
}

// ---------------------------------------------------------------------------------------------
// Sprig (Masterminds/sprig v3), the functions the templates use, with Sprig's semantics. A
// template calling any other function fails to parse, so this list is also the complete list of
// what the templates need.
// ---------------------------------------------------------------------------------------------

const SPRIG: &[(&str, Func)] =
    &[("dict", sprig_dict), ("dig", sprig_dig), ("list", sprig_list), ("toJson", sprig_to_json), ("trunc", sprig_trunc)];

fn func_error(msg: impl Into<String>) -> FuncError {
    FuncError::Generic(msg.into())
}

fn map_of<'v>(value: &'v Value, func: &str) -> Result<&'v std::collections::HashMap<String, Value>, FuncError> {
    match value {
        Value::Map(m) | Value::Object(m) => Ok(m),
        // Go: `ps[len(ps)-1].(map[string]any)` panics, which text/template reports as an error.
        other => Err(func_error(format!("{func}: interface conversion: {other:?} is not map[string]interface {{}}"))),
    }
}

/// `dig "k1" "k2" ... default dict`: the value at that path, `default` where a key is missing,
/// the value itself (even nil) where present; stepping through a non-map is an error.
fn sprig_dig(args: &[Value]) -> Result<Value, FuncError> {
    if args.len() < 3 {
        return Err(FuncError::AtLeastXArgs("dig".into(), 3));
    }
    let (dict, rest) = args.split_last().expect("three arguments");
    let (default, keys) = rest.split_last().expect("two arguments");
    let mut map = map_of(dict, "dig")?;
    for (i, key) in keys.iter().enumerate() {
        let Value::String(key) = key else { return Err(func_error(format!("dig: key {key:?} is not a string"))) };
        match map.get(key) {
            None => return Ok(default.clone()),
            Some(step) if i + 1 == keys.len() => return Ok(step.clone()),
            Some(step) => map = map_of(step, "dig")?,
        }
    }
    unreachable!("dig has at least one key")
}

/// Go's `fmt.Sprintf("%v", v)` for the scalars a dict key can be.
fn strval(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::NoValue | Value::Nil => "<nil>".into(),
        other => other.to_string(),
    }
}

/// `dict k1 v1 k2 v2 ...`: a map; a key without a value maps to "".
fn sprig_dict(args: &[Value]) -> Result<Value, FuncError> {
    let map = args.chunks(2).map(|pair| (strval(&pair[0]), pair.get(1).cloned().unwrap_or_else(|| Value::from("")))).collect();
    Ok(Value::Map(map))
}

/// `list a b ...`: a list of the arguments (`list` alone: an empty one, what `range` over a
/// missing field needs in place of no value).
fn sprig_list(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::Array(args.to_vec()))
}

/// Stands for one byte of invalid UTF-8 in a string: Go strings are bytes and may hold them, a
/// Rust string cannot. A noncharacter, so no real text carries it; `toJson` writes it as Go's
/// json.Marshal writes an invalid byte (`\ufffd`).
const INVALID_BYTE: char = '\u{FDD0}';

/// `trunc n s`: the first n BYTES of s (Go strings are bytes), or its last -n bytes for n < 0.
/// Go keeps a cut UTF-8 sequence as invalid bytes, one [`INVALID_BYTE`] each here.
fn sprig_trunc(args: &[Value]) -> Result<Value, FuncError> {
    let [count, s] = args else { return Err(FuncError::ExactlyXArgs("trunc".into(), 2)) };
    let Value::Number(count) = count else { return Err(func_error(format!("trunc: wrong type for value; expected int; got {count:?}"))) };
    let count = count.as_i64().ok_or_else(|| func_error("trunc: expected an int"))?;
    // Go converts the argument to `string`: a missing value or nil is an error, not "".
    let Value::String(s) = s else { return Err(func_error(format!("trunc: invalid value; expected string; got {s:?}"))) };
    let bytes = s.as_bytes();
    let len = i64::try_from(bytes.len()).expect("string length fits in i64");
    let kept = if count < 0 && len + count > 0 {
        &bytes[usize::try_from(len + count).expect("non-negative")..]
    } else if count >= 0 && len > count {
        &bytes[..usize::try_from(count).expect("non-negative")]
    } else {
        bytes
    };
    let mut out = String::with_capacity(kept.len());
    for chunk in kept.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| INVALID_BYTE));
    }
    Ok(Value::String(out))
}

/// Go's `encoding/json` view of a value; `None` where `json.Marshal` fails.
fn go_json(value: &Value) -> Option<Json> {
    Some(match value {
        Value::NoValue | Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Json::from(i),
            (None, Some(u)) => Json::from(u),
            // NaN and infinities: json.Marshal returns UnsupportedValueError.
            _ => Json::Number(serde_json::Number::from_f64(n.as_f64()?)?),
        },
        Value::Array(items) => Json::Array(items.iter().map(go_json).collect::<Option<_>>()?),
        Value::Map(map) | Value::Object(map) => {
            // json.Marshal writes map keys sorted.
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            Json::Object(sorted.into_iter().map(|(k, v)| Some((k.clone(), go_json(v)?))).collect::<Option<_>>()?)
        }
        Value::Function(_) => return None,
    })
}

/// `toJson v`: `json.Marshal(v)`, with its error swallowed into "" as Sprig does. json.Marshal
/// escapes `<`, `>`, `&`, U+2028 and U+2029 (they can only occur inside strings, where the escape
/// means the same character), and writes each invalid byte as `\ufffd`.
fn sprig_to_json(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = args else { return Err(FuncError::ExactlyXArgs("toJson".into(), 1)) };
    let Some(json) = go_json(value) else { return Ok(Value::from("")) };
    let text = serde_json::to_string(&json).expect("JSON values serialize");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            INVALID_BYTE => out.push_str("\\ufffd"),
            c => out.push(c),
        }
    }
    Ok(Value::String(out))
}

// ---------------------------------------------------------------------------------------------
// Real Go: tests/go/notifications-render.
// ---------------------------------------------------------------------------------------------

/// Where Debian's golang-*-dev packages put Go sources (GOPATH mode): Sprig and its dependencies.
const DEBIAN_GOPATH: &str = "/usr/share/gocode";

/// The renderer built from `tests/go/notifications-render`: Go's text/template with the function
/// map of notifications-engine.
pub struct GoRenderer {
    binary: PathBuf,
}

/// One render: the bytes Go wrote, or Go's error.
pub type GoRender = Result<Vec<u8>, String>;

impl GoRenderer {
    /// The renderer, built once per test run; `None` (the check recorded as skipped) when this
    /// machine has no Go and `CI` is not set. Under CI a missing toolchain is a failure, and a
    /// build that fails always is.
    pub fn get(check: &str) -> Option<&'static GoRenderer> {
        static RENDERER: OnceLock<Result<GoRenderer, String>> = OnceLock::new();
        match RENDERER.get_or_init(GoRenderer::build) {
            Ok(renderer) => Some(renderer),
            Err(missing) if std::env::var_os("CI").is_none_or(|v| v.is_empty()) => {
                medic_sim::swagger::record_skipped(&format!("{check}: skipped, {missing} (bash scripts/go-env.sh installs it)"));
                None
            }
            Err(missing) => panic!("{check}: {missing}; CI must run it: `bash scripts/go-env.sh` installs Go and Sprig"),
        }
    }

    /// `Err` names what is missing; a failing build of what is there panics.
    fn build() -> Result<GoRenderer, String> {
        let gopath = std::env::var("MEDIC_GOPATH").unwrap_or_else(|_| DEBIAN_GOPATH.to_owned());
        let sprig = Path::new(&gopath).join("src/github.com/Masterminds/sprig");
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test");
        let source = PathBuf::from(manifest).join("go/notifications-render");
        let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("notifications-render");
        let go = |args: &[&str]| {
            std::process::Command::new("go")
                .args(args)
                .current_dir(&source)
                // GOPATH mode on Debian's sources: no module download, no network.
                .env("GO111MODULE", "off")
                .env("GOPATH", &gopath)
                .env("GOFLAGS", "")
                .env("GOTOOLCHAIN", "local")
                .output()
        };
        match go(&["version"]) {
            Err(e) => return Err(format!("no Go toolchain (`go`: {e})")),
            Ok(out) if !out.status.success() => return Err(format!("`go version` failed: {}", String::from_utf8_lossy(&out.stderr))),
            Ok(_) => {}
        }
        if !sprig.is_dir() {
            return Err(format!("no Sprig sources at {} (set MEDIC_GOPATH to a GOPATH holding them)", sprig.display()));
        }
        let out = go(&["build", "-o", binary.to_str().expect("a UTF-8 target path"), "."]).expect("go ran a moment ago");
        assert!(out.status.success(), "building {}: {}", source.display(), String::from_utf8_lossy(&out.stderr));
        Ok(GoRenderer { binary })
    }

    /// Renders every `(name, text, vars)` in one process, in order.
    pub fn render_all(&self, cases: &[(String, String, Json)]) -> Vec<GoRender> {
        use base64::Engine as _;
        use std::io::Write as _;

        #[derive(serde::Deserialize)]
        struct Rendered {
            #[serde(default)]
            out: Option<String>,
            #[serde(default)]
            error: Option<String>,
        }
        let input: Vec<Json> =
            cases.iter().map(|(name, text, vars)| serde_json::json!({"name": name, "text": text, "vars": vars})).collect();
        let mut child = std::process::Command::new(&self.binary)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.binary.display()));
        let mut stdin = child.stdin.take().expect("piped stdin");
        let body = serde_json::to_vec(&input).expect("JSON values serialize");
        // Written from a thread: the renderer's answer can fill the stdout pipe before it has read all.
        let writer = std::thread::spawn(move || stdin.write_all(&body));
        let out = child.wait_with_output().expect("the renderer ran");
        writer.join().expect("the writer thread").expect("the renderer read its input");
        assert!(out.status.success(), "notifications-render failed: {}", String::from_utf8_lossy(&out.stderr));
        let rendered: Vec<Rendered> = serde_json::from_slice(&out.stdout).expect("the renderer writes a JSON array");
        assert_eq!(rendered.len(), cases.len(), "one render per case");
        rendered
            .into_iter()
            .map(|r| match (r.out, r.error) {
                (_, Some(error)) => Err(error),
                (out, None) => {
                    Ok(out.map(|b| base64::engine::general_purpose::STANDARD.decode(b).expect("base64 from Go")).unwrap_or_default())
                }
            })
            .collect()
    }
}
