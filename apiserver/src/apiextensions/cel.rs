//! CEL validation rules of CustomResourceDefinitions (`x-kubernetes-validations`), as upstream's
//! apiextensions-apiserver runs them: compiled once per served schema (with a light type check
//! against the structural schema and upstream's static cost estimate), evaluated per write with
//! `self` (and `oldSelf` for transition rules) bound to the value at the rule's node.
//!
//! cel-rust interprets CEL without cost hooks, so each evaluation is preceded by a cost bound
//! computed from the rule's shape and the actual sizes of the data, checked against upstream's
//! per-call limit and per-request budget: a rule never runs unbounded.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use k1s_apimachinery::FieldError;
use serde_json::{Value, json};

/// Upstream's per-expression limit of the estimated cost (celconfig.PerCallLimit is the runtime
/// counterpart).
const STATIC_COST_LIMIT: f64 = 10_000_000.0;
/// Upstream's limit of the estimated cost of all rules of a schema.
const STATIC_CRD_COST_LIMIT: f64 = 100_000_000.0;
/// Upstream's runtime limit of one evaluation.
const PER_CALL_LIMIT: f64 = 1_000_000.0;
/// Upstream's runtime budget of all rules of one request.
const RUNTIME_BUDGET: f64 = 10_000_000.0;
/// The largest request body, which bounds lists, maps and strings without a declared maximum.
const MAX_REQUEST_BYTES: f64 = 3.0 * 1024.0 * 1024.0;
/// Longest result of a messageExpression.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The environment every rule runs in: the standard library, cel-go's strings, lists and math
/// extensions, and the parts of Kubernetes' list library cel-rust lacks.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    for ext in [
        cel::extensions::strings as fn(&mut Env) -> Result<(), cel::DeclarationError>,
        cel::extensions::lists,
        cel::extensions::math,
    ] {
        if let Err(e) = ext(&mut env) {
            tracing::warn!("CEL extension: {e}");
        }
    }
    let lib: [(&str, &str, usize, cel::common::functions::Function); 6] = [
        ("isSorted", "list.isSorted()", 0, list_is_sorted),
        ("sum", "list.sum()", 0, list_sum),
        ("min", "list.min()", 0, list_min),
        ("max", "list.max()", 0, list_max),
        ("indexOf", "list.indexOf(dyn)", 1, list_index_of),
        (
            "lastIndexOf",
            "list.lastIndexOf(dyn)",
            1,
            list_last_index_of,
        ),
    ];
    for (name, id, args, f) in lib {
        if let Err(e) = env.add_member_overload(
            name,
            id,
            LIST_TYPE,
            (0..args).map(|_| DYN_TYPE).collect(),
            f,
        ) {
            tracing::warn!("CEL function {id}: {e}");
        }
    }
    // Kubernetes' quantity, regex, sets, URL, IP and CIDR libraries.
    super::cel_k8s::register(&mut env);
    // The authorization library; its functions are only usable where `authorizer` is declared.
    crate::admission::policy::authz::register(&mut env);
    Arc::new(env)
});

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Cel>, ExecutionError> {
    args.iter()
        .map(|a| {
            Cel::try_from(a.as_ref())
                .map_err(|_| ExecutionError::function_error("list", "unsupported value"))
        })
        .collect()
}

fn list_arg(args: &[CowVal<'_, '_>]) -> Result<(Arc<Vec<Cel>>, Vec<Cel>), ExecutionError> {
    let mut vals = values(args)?;
    if vals.is_empty() {
        return Err(ExecutionError::missing_argument_or_target());
    }
    match vals.remove(0) {
        Cel::List(l) => Ok((l, vals)),
        other => Err(ExecutionError::unsupported_target_type(other)),
    }
}

fn owned<'b, 'v>(v: Cel) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let b: Box<dyn cel::common::value::Val> = v
        .try_into()
        .map_err(|_| ExecutionError::function_error("list", "unsupported value"))?;
    Ok(CowVal::from(b))
}

fn compare(a: &Cel, b: &Cel) -> Result<std::cmp::Ordering, ExecutionError> {
    let num = |v: &Cel| match v {
        Cel::Int(i) => Some(*i as f64),
        Cel::UInt(u) => Some(*u as f64),
        Cel::Float(f) => Some(*f),
        _ => None,
    };
    match (a, b) {
        (Cel::Int(x), Cel::Int(y)) => Ok(x.cmp(y)),
        (Cel::UInt(x), Cel::UInt(y)) => Ok(x.cmp(y)),
        (Cel::String(x), Cel::String(y)) => Ok(x.cmp(y)),
        (Cel::Bool(x), Cel::Bool(y)) => Ok(x.cmp(y)),
        (Cel::Bytes(x), Cel::Bytes(y)) => Ok(x.cmp(y)),
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x
                .partial_cmp(&y)
                .ok_or_else(|| ExecutionError::ValuesNotComparable(a.clone(), b.clone())),
            _ => Err(ExecutionError::ValuesNotComparable(a.clone(), b.clone())),
        },
    }
}

fn list_is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = list_arg(&args)?;
    for w in list.windows(2) {
        if compare(&w[0], &w[1])? == std::cmp::Ordering::Greater {
            return owned(Cel::Bool(false));
        }
    }
    owned(Cel::Bool(true))
}

fn list_sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = list_arg(&args)?;
    let mut acc = match list.first() {
        None | Some(Cel::Int(_)) => Cel::Int(0),
        Some(Cel::UInt(_)) => Cel::UInt(0),
        Some(Cel::Float(_)) => Cel::Float(0.0),
        Some(other) => return Err(ExecutionError::unsupported_target_type(other.clone())),
    };
    for v in list.iter() {
        acc = match (&acc, v) {
            (Cel::Int(a), Cel::Int(b)) => Cel::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Cel::UInt(a), Cel::UInt(b)) => Cel::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Cel::Float(a), Cel::Float(b)) => Cel::Float(a + b),
            (_, other) => return Err(ExecutionError::unsupported_target_type(other.clone())),
        };
    }
    owned(acc)
}

fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    keep: std::cmp::Ordering,
    name: &str,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = list_arg(&args)?;
    let mut best = list.first().cloned().ok_or_else(|| {
        ExecutionError::function_error(name, format!("{name} called on empty list"))
    })?;
    for v in list.iter().skip(1) {
        if compare(v, &best)? == keep {
            best = v.clone();
        }
    }
    owned(best)
}

fn list_min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, std::cmp::Ordering::Less, "min")
}

fn list_max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, std::cmp::Ordering::Greater, "max")
}

fn list_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, rest) = list_arg(&args)?;
    let needle = rest
        .first()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    let i = list
        .iter()
        .position(|v| v == needle)
        .map_or(-1, |i| i as i64);
    owned(Cel::Int(i))
}

fn list_last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, rest) = list_arg(&args)?;
    let needle = rest
        .first()
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    let i = list
        .iter()
        .rposition(|v| v == needle)
        .map_or(-1, |i| i as i64);
    owned(Cel::Int(i))
}

// ---------------------------------------------------------------------------------------------
// Schema helpers

fn ty(s: &Value) -> &str {
    s.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn flag(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn props(s: &Value) -> Option<&serde_json::Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

fn additional(s: &Value) -> Option<&Value> {
    s.get("additionalProperties").filter(|a| a.is_object())
}

fn max(s: &Value, k: &str) -> Option<f64> {
    s.get(k).and_then(Value::as_u64).map(|n| n as f64)
}

/// The smallest JSON text of a value of schema `s` (upstream's estimateMinSizeJSON).
fn min_size(s: &Value) -> f64 {
    match ty(s) {
        "string" => 2.0,
        "boolean" => 4.0,
        "object" | "array" => 2.0,
        _ => 1.0,
    }
}

/// Most items a list of schema `s` can hold in a request.
fn max_items(s: &Value) -> f64 {
    max(s, "maxItems").unwrap_or_else(|| {
        let item = s.get("items").map_or(1.0, min_size);
        ((MAX_REQUEST_BYTES - 2.0) / (item + 1.0)).floor()
    })
}

/// Most entries a map of schema `s` can hold in a request (`"":<value>,`).
fn max_properties(s: &Value) -> f64 {
    max(s, "maxProperties").unwrap_or_else(|| {
        let value = additional(s).map_or(1.0, min_size);
        ((MAX_REQUEST_BYTES - 2.0) / (value + 4.0)).floor()
    })
}

fn max_length(s: &Value) -> f64 {
    max(s, "maxLength").unwrap_or(MAX_REQUEST_BYTES)
}

/// The root schema as rules see it: `apiVersion`, `kind` and only `metadata.name` and
/// `metadata.generateName` (upstream's WithTypeAndObjectMeta).
fn with_type_and_object_meta(s: &Value) -> Value {
    let mut s = s.clone();
    if let Some(o) = s.as_object_mut() {
        let p = o.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = p.as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string"}));
            p.insert("kind".into(), json!({"type": "string"}));
            p.insert(
                "metadata".into(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string"},
                    "generateName": {"type": "string"},
                }}),
            );
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// JSON to CEL values

/// The CEL value of JSON `v` typed by schema `s` (integers stay ints, numbers are doubles).
fn to_cel(v: &Value, s: Option<&Value>) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::String(x) => Cel::String(Arc::new(x.clone())),
        Value::Number(n) => {
            let number = s.is_some_and(|s| ty(s) == "number");
            match (n.as_i64(), n.as_f64()) {
                (Some(i), _) if !number => Cel::Int(i),
                (_, Some(f)) if !number && f.fract() == 0.0 && f.abs() < 9.2e18 => {
                    Cel::Int(f as i64)
                }
                (_, Some(f)) => Cel::Float(f),
                _ => Cel::Null,
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.get("items"));
            Cel::List(Arc::new(a.iter().map(|x| to_cel(x, items)).collect()))
        }
        Value::Object(o) => {
            let mut m: HashMap<Key, Cel> = HashMap::with_capacity(o.len());
            for (k, x) in o {
                let sub = s.and_then(|s| props(s).and_then(|p| p.get(k)).or_else(|| additional(s)));
                m.insert(Key::String(Arc::new(k.clone())), to_cel(x, sub));
            }
            Cel::Map(Map::from(m))
        }
    }
}

/// The root object as rules see it: metadata reduced to name and generateName.
fn root_view(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        md.retain(|k, _| k == "name" || k == "generateName");
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Static check and cost estimate

/// The static type of an expression, as far as this checker follows it.
#[derive(Clone)]
enum Ty<'a> {
    /// A value of this schema node.
    Node(&'a Value),
    /// A list of at most `n` elements of the given type.
    List(Box<Ty<'a>>, f64),
    /// A string of at most `n` bytes.
    Str(f64),
    /// A boolean, number or other small scalar.
    Scalar,
    /// Unknown (preserved unknown fields, int-or-string, results of the less common functions).
    Dyn,
}

/// How sizes are bounded: by the schema (CRD creation) or by the actual data (each evaluation).
#[derive(Clone, Copy)]
enum Sizes {
    Schema,
    Actual { len: f64, str_len: f64 },
}

struct Checker<'a> {
    root: &'a Value,
    optional_old_self: bool,
    sizes: Sizes,
    source: &'a cel::common::ast::SourceInfo,
    /// Variables bound by comprehensions.
    scope: Vec<(String, Ty<'a>)>,
    errors: Vec<String>,
    uses_old_self: bool,
    /// Top-level variables of an admission expression (`object`, `request`, ...), all dynamic;
    /// empty for CRD rules, which see `self` and `oldSelf` instead.
    declared: &'a [&'a str],
    /// The names under `variables` an admission expression may select (policy composition).
    variable_names: &'a [String],
    /// Errors upstream finds when it instantiates the program (a literal regex of `find` or
    /// `findAll` that does not compile).
    program_errors: Vec<String>,
}

const NAMESPACES: &[&str] = &[
    "math", "strings", "lists", "optional", "base64", "cel", "sets", "ip", "format",
];
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "null",
];
/// Functions that scan a string (cost proportional to its length, as cel-go's traversal cost).
const STRING_SCANS: &[&str] = &[
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "indexOf",
    "lastIndexOf",
    "substring",
    "charAt",
    "reverse",
    "join",
    "format",
];
/// Every function and operator a rule may call.
const FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "dyn",
    "type",
    "has",
    "timestamp",
    "duration",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "join",
    "indexOf",
    "lastIndexOf",
    "substring",
    "charAt",
    "reverse",
    "format",
    "quote",
    "isSorted",
    "sum",
    "min",
    "max",
    "slice",
    "flatten",
    "distinct",
    "sort",
    "range",
    "greatest",
    "least",
    "abs",
    "ceil",
    "floor",
    "round",
    "trunc",
    "sign",
    "sqrt",
    "isNaN",
    "isInf",
    "isFinite",
    "bitAnd",
    "bitOr",
    "bitXor",
    "bitNot",
    "bitShiftLeft",
    "bitShiftRight",
    "of",
    "none",
    "ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    "encode",
    "decode",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
];

impl<'a> Checker<'a> {
    fn error(&mut self, id: u64, msg: String) {
        self.errors.push(format_issue(self.source, id, &msg));
    }

    fn lookup(&self, name: &str) -> Option<Ty<'a>> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn list_len(&self, declared: f64) -> f64 {
        match self.sizes {
            Sizes::Schema => declared,
            Sizes::Actual { len, .. } => len,
        }
    }

    fn str_len(&self, declared: f64) -> f64 {
        match self.sizes {
            Sizes::Schema => declared,
            Sizes::Actual { str_len, .. } => str_len,
        }
    }

    /// The string length a value of this type may have (for string scans).
    fn string_size(&self, t: &Ty<'_>) -> f64 {
        match t {
            Ty::Str(n) => self.str_len(*n),
            Ty::Node(s) if ty(s) == "string" => self.str_len(max_length(s)),
            Ty::Node(s) if ty(s).is_empty() => self.str_len(MAX_REQUEST_BYTES),
            Ty::Dyn => self.str_len(1_000.0),
            _ => 1.0,
        }
    }

    /// The elements and count of what a comprehension iterates.
    fn elements(&self, t: &Ty<'a>) -> (Ty<'a>, f64) {
        match t {
            Ty::List(elem, n) => ((**elem).clone(), self.list_len(*n)),
            Ty::Node(s) if ty(s) == "array" => (
                s.get("items").map_or(Ty::Dyn, Ty::Node),
                self.list_len(max_items(s)),
            ),
            Ty::Node(s) if ty(s) == "object" => (Ty::Str(256.0), self.list_len(max_properties(s))),
            _ => (Ty::Dyn, self.list_len(1_000.0)),
        }
    }

    fn select(&mut self, id: u64, operand: Ty<'a>, field: &str) -> Ty<'a> {
        let Ty::Node(s) = operand else {
            return Ty::Dyn;
        };
        if let Some(p) = props(s).and_then(|p| p.get(field)) {
            return Ty::Node(p);
        }
        if let Some(ap) = additional(s) {
            return Ty::Node(ap);
        }
        if ty(s) == "object" && !flag(s, "x-kubernetes-preserve-unknown-fields") {
            self.error(id, format!("undefined field '{field}'"));
        }
        Ty::Dyn
    }

    /// The type and estimated cost of `e`.
    fn check(&mut self, e: &IdedExpr) -> (Ty<'a>, f64) {
        match &e.expr {
            Expr::Unspecified => (Ty::Dyn, 0.0),
            Expr::Literal(_) => (Ty::Scalar, 0.0),
            Expr::Ident(name) => {
                if let Some(t) = self.lookup(name) {
                    return (t, 1.0);
                }
                match name.as_str() {
                    n if self.declared.contains(&n) => (Ty::Dyn, 1.0),
                    "self" if self.declared.is_empty() => (Ty::Node(self.root), 1.0),
                    "oldSelf" if self.declared.is_empty() => {
                        self.uses_old_self = true;
                        if self.optional_old_self {
                            (Ty::Dyn, 1.0)
                        } else {
                            (Ty::Node(self.root), 1.0)
                        }
                    }
                    n if TYPE_NAMES.contains(&n) || NAMESPACES.contains(&n) => (Ty::Scalar, 1.0),
                    n => {
                        self.error(
                            e.id,
                            format!("undeclared reference to '{n}' (in container '')"),
                        );
                        (Ty::Dyn, 1.0)
                    }
                }
            }
            Expr::Select(sel) => {
                // Namespaced functions and type names (`math.abs`) are not field selections.
                if let Expr::Ident(ns) = &sel.operand.expr
                    && NAMESPACES.contains(&ns.as_str())
                    && self.lookup(ns).is_none()
                {
                    return (Ty::Dyn, 1.0);
                }
                let (t, c) = self.check(&sel.operand);
                if matches!(&sel.operand.expr, Expr::Ident(v) if v == "variables")
                    && self.declared.contains(&"variables")
                    && self.lookup("variables").is_none()
                    && !self.variable_names.iter().any(|n| n == &sel.field)
                {
                    self.error(e.id, format!("undefined field '{}'", sel.field));
                }
                let out = self.select(e.id, t, &sel.field);
                if sel.test {
                    (Ty::Scalar, c + 1.0)
                } else {
                    (out, c + 1.0)
                }
            }
            Expr::List(l) => {
                let mut cost = 10.0;
                let mut elem = Ty::Dyn;
                for x in &l.elements {
                    let (t, c) = self.check(x);
                    cost += c;
                    elem = t;
                }
                (Ty::List(Box::new(elem), l.elements.len() as f64), cost)
            }
            Expr::Map(m) => {
                let mut cost = 30.0;
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        cost += self.check(&me.key).1 + self.check(&me.value).1;
                    }
                }
                (Ty::Dyn, cost)
            }
            Expr::Struct(s) => {
                let mut cost = 40.0;
                for entry in &s.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => cost += self.check(&f.value).1,
                        EntryExpr::MapEntry(me) => {
                            cost += self.check(&me.key).1 + self.check(&me.value).1;
                        }
                    }
                }
                (Ty::Dyn, cost)
            }
            Expr::Comprehension(c) => {
                let (range, rc) = self.check(&c.iter_range);
                let (elem, n) = self.elements(&range);
                let (_, ic) = self.check(&c.accu_init);
                let value_ty = match &range {
                    Ty::Node(s) => additional(s).map_or(Ty::Dyn, Ty::Node),
                    _ => Ty::Dyn,
                };
                let depth = self.scope.len();
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push((c.iter_var.clone(), Ty::Scalar));
                    self.scope.push((v2.clone(), value_ty));
                } else {
                    self.scope.push((c.iter_var.clone(), elem.clone()));
                }
                self.scope.push((c.accu_var.clone(), Ty::Dyn));
                let (_, cc) = self.check(&c.loop_cond);
                let (step_ty, sc) = self.check(&c.loop_step);
                let (result_ty, rsc) = self.check(&c.result);
                self.scope.truncate(depth);
                let builds_list =
                    matches!(&c.accu_init.expr, Expr::List(l) if l.elements.is_empty());
                let out = if builds_list {
                    Ty::List(Box::new(Ty::Dyn), n)
                } else if matches!(result_ty, Ty::Dyn) {
                    step_ty
                } else {
                    result_ty
                };
                (out, rc + ic + n * (cc + sc + 1.0) + rsc)
            }
            Expr::Call(call) => self.call(e.id, call),
        }
    }

    fn call(&mut self, id: u64, call: &cel::common::ast::CallExpr) -> (Ty<'a>, f64) {
        let name = call.func_name.as_str();
        let mut cost = 1.0;
        let mut target_ty = None;
        let namespaced = call.target.as_ref().is_some_and(|t| {
            matches!(&t.expr, Expr::Ident(ns) if NAMESPACES.contains(&ns.as_str()) && self.lookup(ns).is_none())
        });
        if let Some(t) = &call.target
            && !namespaced
        {
            let (tt, tc) = self.check(t);
            cost += tc;
            target_ty = Some(tt);
        }
        let mut arg_tys = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (t, c) = self.check(a);
            cost += c;
            arg_tys.push(t);
        }
        let is_operator = name.starts_with('_') || name.contains('@') || name.starts_with('!');
        let authz = self.declared.contains(&"authorizer")
            && crate::admission::policy::authz::FUNCTIONS.contains(&name);
        let known = |n: &str| FUNCTIONS.contains(&n) || super::cel_k8s::FUNCTIONS.contains(&n);
        // A namespaced call (`sets.contains(...)`) by its qualified name too.
        let qualified_call = match call.target.as_ref().map(|t| &t.expr) {
            Some(Expr::Ident(ns)) if namespaced => known(&format!("{ns}.{name}")),
            _ => false,
        };
        if !is_operator && !authz && !qualified_call && !known(name) {
            let qualified = name.rsplit('.').next().unwrap_or(name);
            if !known(qualified) {
                self.error(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
            }
        }
        let receiver = target_ty.clone().or_else(|| arg_tys.first().cloned());
        match name {
            "_[_]" | "_[?_]" => {
                let t = match arg_tys.first() {
                    Some(Ty::List(elem, _)) => (**elem).clone(),
                    Some(Ty::Node(s)) if ty(s) == "array" => {
                        s.get("items").map_or(Ty::Dyn, Ty::Node)
                    }
                    Some(Ty::Node(s)) => additional(s).map_or(Ty::Dyn, Ty::Node),
                    _ => Ty::Dyn,
                };
                return (t, cost);
            }
            "_+_" => {
                if let (Some(a), Some(b)) = (arg_tys.first(), arg_tys.get(1)) {
                    let (la, lb) = (self.string_size(a), self.string_size(b));
                    if matches!(a, Ty::Str(_)) || matches!(a, Ty::Node(s) if ty(s) == "string") {
                        return (Ty::Str(la + lb), cost + (la + lb) * 0.1);
                    }
                    if let (Ty::List(e, n), Ty::List(_, m)) = (a, b) {
                        return (Ty::List(e.clone(), n + m), cost + n + m);
                    }
                }
                return (Ty::Dyn, cost);
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let size = arg_tys
                    .iter()
                    .map(|t| match t {
                        Ty::Str(_) => self.string_size(t),
                        Ty::Node(s) if ty(s) == "string" => self.string_size(t),
                        Ty::List(_, n) => self.list_len(*n),
                        Ty::Node(s) if ty(s) == "array" => self.list_len(max_items(s)),
                        _ => 1.0,
                    })
                    .fold(1.0, f64::max);
                return (Ty::Scalar, cost + size * 0.1);
            }
            _ => {}
        }
        // cel-go's sets: every element of one list against every element of the other.
        let sets = name.starts_with("sets.")
            || namespaced
                && matches!(call.target.as_ref().map(|t| &t.expr), Some(Expr::Ident(ns)) if ns == "sets");
        if sets {
            let n = arg_tys.first().map_or(1.0, |t| self.elements(t).1);
            let m = arg_tys.get(1).map_or(1.0, |t| self.elements(t).1);
            return (Ty::Scalar, cost + n * m);
        }
        if super::cel_k8s::STRING_PARSERS.contains(&name)
            && let Some(r) = &receiver
        {
            // Parsing, like a regex scan, is linear in the string (times the pattern's length
            // for find and findAll).
            let len = self.string_size(r);
            if let (
                "find" | "findAll",
                Some(Expr::Literal(cel::common::ast::LiteralValue::String(p))),
            ) = (name, call.args.first().map(|a| &a.expr))
                && let Some(e) = super::cel_k8s::regex_error(p)
            {
                self.program_errors.push(e);
            }
            let factor = match (name, call.args.first().map(|a| &a.expr)) {
                (
                    "find" | "findAll",
                    Some(Expr::Literal(cel::common::ast::LiteralValue::String(p))),
                ) => p.len().max(1) as f64,
                _ => 1.0,
            };
            cost += (len * 0.1 * factor).ceil();
            return match name {
                "findAll" => (Ty::List(Box::new(Ty::Str(len)), len), cost),
                "find" => (Ty::Str(len), cost),
                _ => (Ty::Dyn, cost),
            };
        }
        if STRING_SCANS.contains(&name)
            && let Some(r) = &receiver
        {
            let len = self.string_size(r);
            let factor = if name == "matches" {
                // cel-go: string length times the pattern's length.
                match call.args.last().map(|a| &a.expr) {
                    Some(Expr::Literal(cel::common::ast::LiteralValue::String(p))) => {
                        p.len().max(1) as f64
                    }
                    _ => 1.0,
                }
            } else {
                1.0
            };
            cost += (len * 0.1 * factor).ceil();
            return match name {
                "split" => (Ty::List(Box::new(Ty::Str(len)), len), cost),
                "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt"
                | "reverse" | "format" | "join" => (Ty::Str(len), cost),
                _ => (Ty::Scalar, cost),
            };
        }
        match name {
            "isSorted" | "sum" | "min" | "max" | "sort" | "distinct" | "reverse" => {
                let (elem, n) = receiver
                    .as_ref()
                    .map_or((Ty::Dyn, 1.0), |r| self.elements(r));
                let cost = cost + n * if name == "sort" { 20.0 } else { 1.0 };
                match name {
                    "sort" | "distinct" | "reverse" => (Ty::List(Box::new(elem), n), cost),
                    "min" | "max" => (elem, cost),
                    _ => (Ty::Scalar, cost),
                }
            }
            "string" => (Ty::Str(64.0), cost),
            _ => (Ty::Dyn, cost),
        }
    }
}

/// A cel-go style issue: `ERROR: <input>:1:5: msg` with the source line and a caret.
fn format_issue(source: &cel::common::ast::SourceInfo, id: u64, msg: &str) -> String {
    let (line, col) = source
        .offset_for(id)
        .map(|(start, _)| {
            let start = start as usize;
            let before = source.source.get(..start).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
            (line, col)
        })
        .unwrap_or((1, 0));
    let text = source.source.lines().nth(line - 1).unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{}: {msg}\n | {text}\n | {}^",
        col + 1,
        ".".repeat(col)
    )
}

fn format_parse_errors(src: &str, errs: &cel::ParseErrors) -> String {
    errs.errors
        .iter()
        .map(|e| {
            let (line, col) = (e.pos.0.max(1) as usize, e.pos.1.max(1) as usize);
            let text = src.lines().nth(line - 1).unwrap_or_default();
            format!(
                "ERROR: <input>:{line}:{col}: {}\n | {text}\n | {}^",
                e.msg,
                ".".repeat(col - 1)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// Compilation

/// One compiled rule.
struct Rule {
    rule: String,
    message: String,
    message_expression: Option<(String, Program)>,
    reason: Option<String>,
    /// `fieldPath` as a field path relative to the rule's node.
    field_path: Option<String>,
    program: Program,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl Rule {
    /// upstream's ruleErrorString: the message if any, else the rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() {
            &self.rule
        } else {
            &self.message
        }
    }

    fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.rule)
        } else {
            self.message.clone()
        }
    }
}

/// The CEL validators of one schema node and of the nodes below it that have rules.
pub struct Validator {
    /// The node's schema as rules see it (the root's with apiVersion, kind and metadata).
    schema: Value,
    ty: String,
    root: bool,
    rules: Vec<Rule>,
    properties: Vec<(String, Validator)>,
    additional: Option<Box<Validator>>,
    items: Option<Box<Validator>>,
    all_of: Vec<Validator>,
    /// `x-kubernetes-list-map-keys` of a list-type map (its items correlate with old items).
    list_map_keys: Option<Vec<String>>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

struct Build<'e> {
    errs: &'e mut Vec<FieldError>,
    total_cost: f64,
}

/// Compiles the rules of a version's `openAPIV3Schema`. Errors use `path` (the schema's field
/// path in the CRD) as upstream's CRD validation reports them. `None` when there are no rules.
pub fn compile(schema: &Value, path: &str) -> (Option<Validator>, Vec<FieldError>) {
    let mut errs = Vec::new();
    let mut b = Build {
        errs: &mut errs,
        total_cost: 0.0,
    };
    let v = build(schema, path, true, 1.0, None, &mut b);
    let total = b.total_cost;
    if total > STATIC_CRD_COST_LIMIT {
        errs.push(FieldError::forbidden(
            path,
            cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                STATIC_CRD_COST_LIMIT,
            ),
        ));
    }
    (v, errs)
}

fn cost_message(what: &str, cost: f64, limit: f64) -> String {
    let factor = cost / limit;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

fn has_rules(s: &Value) -> bool {
    s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
        || props(s).is_some_and(|p| p.values().any(has_rules))
        || additional(s).is_some_and(has_rules)
        || s.get("items").is_some_and(has_rules)
        || s.get("allOf")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(has_rules))
}

/// `uncorrelatable`: the schema path of the nearest list above that is not a list-type map
/// (transition rules cannot reach their old value there).
fn build(
    s: &Value,
    path: &str,
    root: bool,
    cardinality: f64,
    uncorrelatable: Option<&str>,
    b: &mut Build<'_>,
) -> Option<Validator> {
    if !s.is_object() || !has_rules(s) {
        return None;
    }
    let view = if root {
        with_type_and_object_meta(s)
    } else {
        s.clone()
    };
    let mut rules = Vec::new();
    for (i, r) in s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let rpath = format!("{path}.x-kubernetes-validations[{i}]");
        if let Some(rule) = compile_rule(r, &view, &rpath, cardinality, uncorrelatable, b) {
            rules.push(rule);
        }
    }
    let mut properties = Vec::new();
    for (k, p) in props(s).into_iter().flatten() {
        if let Some(v) = build(
            p,
            &format!("{path}.properties[{k}]"),
            false,
            cardinality,
            uncorrelatable,
            b,
        ) {
            properties.push((k.clone(), v));
        }
    }
    let additional = additional(s).and_then(|ap| {
        build(
            ap,
            &format!("{path}.additionalProperties"),
            false,
            cardinality * max_properties(s),
            uncorrelatable,
            b,
        )
        .map(Box::new)
    });
    let list_map_keys = (s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map"))
        .then(|| {
            s.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        });
    let items = s.get("items").and_then(|it| {
        let ipath = format!("{path}.items");
        let below = if list_map_keys.is_some() {
            uncorrelatable
        } else {
            Some(uncorrelatable.unwrap_or(path))
        };
        build(it, &ipath, false, cardinality * max_items(s), below, b).map(Box::new)
    });
    let all_of = s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, sub)| {
            build(
                sub,
                &format!("{path}.allOf[{i}]"),
                false,
                cardinality,
                uncorrelatable,
                b,
            )
        })
        .collect();
    Some(Validator {
        ty: ty(s).to_string(),
        schema: view,
        root,
        rules,
        properties,
        additional,
        items,
        all_of,
        list_map_keys,
    })
}

fn compile_rule(
    r: &Value,
    view: &Value,
    rpath: &str,
    cardinality: f64,
    uncorrelatable: Option<&str>,
    b: &mut Build<'_>,
) -> Option<Rule> {
    let text = r.get("rule").and_then(Value::as_str).unwrap_or_default();
    let message = r.get("message").and_then(Value::as_str);
    let message_expression = r.get("messageExpression").and_then(Value::as_str);
    let reason = r.get("reason").and_then(Value::as_str);
    let field_path = r.get("fieldPath").and_then(Value::as_str);
    let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool);
    let mut ok = true;
    if text.trim().is_empty() {
        b.errs.push(FieldError::required(
            format!("{rpath}.rule"),
            "rule is not specified",
        ));
        return None;
    }
    if let Some(m) = message {
        if m.trim().is_empty() {
            b.errs.push(FieldError::required(
                format!("{rpath}.message"),
                "message must be non-empty if specified",
            ));
        } else if m.contains('\n') {
            b.errs.push(FieldError::invalid(
                format!("{rpath}.message"),
                m,
                "message must not contain line breaks",
            ));
        }
    }
    if let Some(m) = message_expression
        && m.trim().is_empty()
    {
        b.errs.push(FieldError::required(
            format!("{rpath}.messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
        ok = false;
    }
    if let Some(reason) = reason
        && !REASONS.contains(&reason)
    {
        b.errs.push(FieldError::not_supported(
            format!("{rpath}.reason"),
            reason,
            &REASONS,
        ));
    }
    let normalized_path = match field_path {
        Some(fp) if !fp.is_empty() => match valid_field_path(fp, view) {
            Ok(p) => Some(p),
            Err(_) => {
                b.errs.push(FieldError::invalid(
                    format!("{rpath}.fieldPath"),
                    fp,
                    "fieldPath must be a valid path",
                ));
                None
            }
        },
        _ => None,
    };
    let program = match catch_unwind(|| ENV.compile(text)) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            b.errs.push(FieldError::invalid(
                format!("{rpath}.rule"),
                text,
                format!("compilation failed: {}", format_parse_errors(text, &e)),
            ));
            return None;
        }
        Err(_) => {
            b.errs.push(FieldError::invalid(
                format!("{rpath}.rule"),
                text,
                "compilation failed: internal error",
            ));
            return None;
        }
    };
    let mut checker = Checker {
        root: view,
        optional_old_self: optional_old_self == Some(true),
        sizes: Sizes::Schema,
        source: program.source_info(),
        scope: Vec::new(),
        errors: Vec::new(),
        uses_old_self: false,
        declared: &[],
        variable_names: &[],
        program_errors: Vec::new(),
    };
    let (_, cost) = checker.check(program.expression());
    if !checker.errors.is_empty() {
        b.errs.push(FieldError::invalid(
            format!("{rpath}.rule"),
            text,
            format!("compilation failed: {}", checker.errors.join("\n")),
        ));
        return None;
    }
    if let Some(e) = checker.program_errors.first() {
        b.errs.push(FieldError::invalid(
            format!("{rpath}.rule"),
            text,
            format!("program instantiation failed: {e}"),
        ));
        return None;
    }
    let uses_old_self = checker.uses_old_self;
    if let Some(within) = uncorrelatable
        && uses_old_self
    {
        b.errs.push(FieldError::invalid(
            format!("{rpath}.rule"),
            text,
            format!(
                "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
            ),
        ));
        ok = false;
    }
    if optional_old_self.is_some() && !uses_old_self {
        b.errs.push(FieldError::invalid(
            format!("{rpath}.optionalOldSelf"),
            optional_old_self.unwrap_or(false),
            "may not be set if rule does not use oldSelf",
        ));
    }
    let rule_cost = cost * cardinality;
    if rule_cost > STATIC_COST_LIMIT {
        b.errs.push(FieldError::forbidden(
            format!("{rpath}.rule"),
            cost_message("estimated rule cost", rule_cost, STATIC_COST_LIMIT),
        ));
        ok = false;
    }
    b.total_cost += rule_cost;
    let message_expression = match message_expression.filter(|m| !m.trim().is_empty()) {
        None => None,
        Some(m) => match catch_unwind(|| ENV.compile(m)) {
            Ok(Ok(p)) => {
                let mut checker = Checker {
                    root: view,
                    optional_old_self: false,
                    sizes: Sizes::Schema,
                    source: p.source_info(),
                    scope: Vec::new(),
                    errors: Vec::new(),
                    uses_old_self: false,
                    declared: &[],
                    variable_names: &[],
                    program_errors: Vec::new(),
                };
                checker.check(p.expression());
                if checker.uses_old_self {
                    checker.errors.push(format!(
                        "ERROR: <input>:1:1: undeclared reference to 'oldSelf' (in container '')\n | {m}\n | ^"
                    ));
                }
                if checker.errors.is_empty() {
                    Some((m.to_string(), p))
                } else {
                    b.errs.push(FieldError::invalid(
                        format!("{rpath}.messageExpression"),
                        m,
                        format!(
                            "messageExpression compilation failed: {}",
                            checker.errors.join("\n")
                        ),
                    ));
                    ok = false;
                    None
                }
            }
            Ok(Err(e)) => {
                b.errs.push(FieldError::invalid(
                    format!("{rpath}.messageExpression"),
                    m,
                    format!(
                        "messageExpression compilation failed: {}",
                        format_parse_errors(m, &e)
                    ),
                ));
                ok = false;
                None
            }
            Err(_) => None,
        },
    };
    ok.then(|| Rule {
        rule: text.trim().to_string(),
        message: message.unwrap_or_default().trim().to_string(),
        message_expression,
        reason: reason.map(str::to_string),
        field_path: normalized_path,
        program,
        uses_old_self,
        optional_old_self: optional_old_self == Some(true),
    })
}

/// A rule's `fieldPath` (`.a.b`, `.m['key']`) checked against the node's schema, as a field
/// path relative to the node (upstream's ValidFieldPath).
fn valid_field_path(fp: &str, schema: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut s = schema;
    let mut rest = fp;
    while !rest.is_empty() {
        let (name, after) = if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            (r[..end].to_string(), &r[end..])
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").ok_or("expected single quoted string")?;
            (r[..end].replace("\\'", "'"), &r[end + 2..])
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        };
        if name.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        if let Some(p) = props(s) {
            s = p.get(&name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if let Some(ap) = additional(s) {
            s = ap;
            out.push_str(&format!("[{name}]"));
        } else {
            return Err("does not refer to a valid field".into());
        }
        rest = after;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Evaluation

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn shown_path(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

/// The longest list/map and the longest string in `v`.
fn measure(v: &Value, len: &mut usize, str_len: &mut usize) {
    match v {
        Value::Array(a) => {
            *len = (*len).max(a.len());
            for x in a {
                measure(x, len, str_len);
            }
        }
        Value::Object(o) => {
            *len = (*len).max(o.len());
            for (k, x) in o {
                *str_len = (*str_len).max(k.len());
                measure(x, len, str_len);
            }
        }
        Value::String(s) => *str_len = (*str_len).max(s.len()),
        _ => {}
    }
}

struct Run {
    errs: Vec<FieldError>,
    budget: f64,
    exhausted: bool,
}

impl Validator {
    /// Runs the rules on `obj` (and `old` on update). Errors carry upstream's field paths,
    /// types and messages.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut run = Run {
            errs: Vec::new(),
            budget: RUNTIME_BUDGET,
            exhausted: false,
        };
        let ratchet = old.is_some_and(|o| o == obj);
        self.walk("", obj, old, ratchet, &mut run);
        run.errs
    }

    fn walk(&self, path: &str, v: &Value, old: Option<&Value>, unchanged: bool, run: &mut Run) {
        if run.exhausted || v.is_null() {
            return;
        }
        self.evaluate(path, v, old, unchanged, run);
        for sub in &self.all_of {
            sub.walk(path, v, old, unchanged, run);
        }
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    let oldx = old.and_then(|o| o.get(k));
                    let unchanged_x = match oldx {
                        Some(ox) => ox == x,
                        None => false,
                    };
                    if let Some(p) = self.properties.iter().find(|(n, _)| n == k) {
                        p.1.walk(&child(path, k), x, oldx, unchanged_x, run);
                    } else if let Some(ap) = &self.additional {
                        ap.walk(&format!("{path}[{k}]"), x, oldx, unchanged_x, run);
                    }
                }
            }
            Value::Array(a) => {
                let Some(items) = &self.items else { return };
                for (i, x) in a.iter().enumerate() {
                    let oldx = self.list_map_keys.as_ref().and_then(|keys| {
                        old.and_then(Value::as_array)?
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k) == x.get(k)))
                    });
                    // Items of other lists do not correlate: they ratchet with the list.
                    let unchanged_x = match oldx {
                        Some(ox) => ox == x,
                        None => self.list_map_keys.is_none() && unchanged,
                    };
                    items.walk(&format!("{path}[{i}]"), x, oldx, unchanged_x, run);
                }
            }
            _ => {}
        }
    }

    fn evaluate(&self, path: &str, v: &Value, old: Option<&Value>, unchanged: bool, run: &mut Run) {
        if self.rules.is_empty() {
            return;
        }
        let view;
        let old_view;
        let (v, old) = if self.root {
            view = root_view(v);
            old_view = old.map(root_view);
            (&view, old_view.as_ref())
        } else {
            (v, old)
        };
        let (mut len, mut str_len) = (0, 0);
        measure(v, &mut len, &mut str_len);
        if let Some(o) = old {
            measure(o, &mut len, &mut str_len);
        }
        let sizes = Sizes::Actual {
            len: len.max(1) as f64,
            str_len: str_len.max(1) as f64,
        };
        let self_val = to_cel(v, Some(&self.schema));
        let old_val = old.map(|o| to_cel(o, Some(&self.schema)));
        for rule in &self.rules {
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let cost = actual_cost(&rule.program, &self.schema, rule.optional_old_self, sizes);
            if cost > PER_CALL_LIMIT {
                run.errs.push(FieldError::invalid(
                    shown_path(path),
                    self.ty.as_str(),
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.error_string()
                    ),
                ));
                run.exhausted = true;
                return;
            }
            if cost > run.budget {
                run.errs.push(FieldError::invalid(
                    shown_path(path),
                    self.ty.as_str(),
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                run.exhausted = true;
                return;
            }
            run.budget -= cost;
            let result = execute(
                &rule.program,
                &self_val,
                old_val.as_ref(),
                rule.uses_old_self && rule.optional_old_self,
            );
            match result {
                Ok(Cel::Bool(true)) => continue,
                Ok(Cel::Bool(false)) => {}
                Ok(other) => {
                    run.errs.push(FieldError::invalid(
                        shown_path(path),
                        self.ty.as_str(),
                        format!(
                            "rule did not evaluate to a boolean: {} evaluating rule: {}",
                            type_name(&other),
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    let detail = match &e {
                        ExecutionError::NoSuchOverload(_) => format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                        _ => format!("{} evaluating rule: {}", go_error(&e), rule.error_string()),
                    };
                    run.errs.push(FieldError::invalid(
                        shown_path(path),
                        self.ty.as_str(),
                        detail,
                    ));
                    continue;
                }
            }
            // The rule failed: ratcheting lets an unchanged value keep failing a rule that
            // does not look at oldSelf.
            if !rule.uses_old_self && unchanged {
                continue;
            }
            let fpath = match &rule.field_path {
                Some(fp) if fp.starts_with('[') => format!("{path}{fp}"),
                Some(fp) => child(path, fp),
                None => path.to_string(),
            };
            let detail = rule
                .message_expression
                .as_ref()
                .and_then(|(_, p)| message(p, &self_val, &self.schema, sizes, run))
                .unwrap_or_else(|| rule.message_or_default());
            let fpath = shown_path(&fpath);
            run.errs.push(match rule.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(fpath, detail),
                Some("FieldValueRequired") => FieldError::required(fpath, detail),
                Some("FieldValueDuplicate") => FieldError::duplicate(fpath, self.ty.as_str()),
                _ => FieldError::invalid(fpath, self.ty.as_str(), detail),
            });
        }
    }
}

/// The message a messageExpression gives, or `None` to fall back to the message.
fn message(
    p: &Program,
    self_val: &Cel,
    schema: &Value,
    sizes: Sizes,
    run: &mut Run,
) -> Option<String> {
    let cost = actual_cost(p, schema, false, sizes);
    if cost > PER_CALL_LIMIT || cost > run.budget {
        return None;
    }
    run.budget -= cost;
    match execute(p, self_val, None, false) {
        Ok(Cel::String(s)) => {
            let s = s.trim();
            (!s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE_BYTES)
                .then(|| s.to_string())
        }
        _ => None,
    }
}

fn actual_cost(p: &Program, schema: &Value, optional_old_self: bool, sizes: Sizes) -> f64 {
    let mut checker = Checker {
        root: schema,
        optional_old_self,
        sizes,
        source: p.source_info(),
        scope: Vec::new(),
        errors: Vec::new(),
        uses_old_self: false,
        declared: &[],
        variable_names: &[],
        program_errors: Vec::new(),
    };
    checker.check(p.expression()).1
}

/// Runs a program with `self` and `oldSelf` bound (`oldSelf` as an optional for
/// `optionalOldSelf` rules). A panic inside the interpreter is an evaluation error.
fn execute(
    p: &Program,
    self_val: &Cel,
    old: Option<&Cel>,
    optional_old_self: bool,
) -> Result<Cel, ExecutionError> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut ctx = Context::with_env(Arc::clone(&ENV));
        ctx.add_variable_from_value("self", self_val.clone());
        if optional_old_self {
            let opt = match old {
                Some(o) => cel::objects::OptionalValue::of(o.clone()),
                None => cel::objects::OptionalValue::none(),
            };
            ctx.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
        } else if let Some(o) = old {
            ctx.add_variable_from_value("oldSelf", o.clone());
        }
        p.execute(&ctx)
    }))
    .unwrap_or_else(|_| {
        Err(ExecutionError::InternalError(
            "internal error evaluating rule".into(),
        ))
    })
}

fn type_name(v: &Cel) -> String {
    v.type_of().to_string()
}

/// cel-rust's evaluation errors in cel-go's words where they differ.
fn go_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", show(i)),
        ExecutionError::UndeclaredReference(r) => format!("no such attribute: {r}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => {
            let s = other.to_string();
            let mut c = s.chars();
            match c.next() {
                Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
                None => s,
            }
        }
    }
}

fn show(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::Float(f) => f.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Admission expressions (ValidatingAdmissionPolicy, webhook matchConditions)

/// The schema root of admission expressions (they have none: every variable is dynamic).
static NULL: Value = Value::Null;

/// CEL values, for callers of admission expressions.
pub use cel::Value as CelValue;

/// An admission expression compiled once: the same environment, checker and cost bounds as the
/// CRD rules, with dynamically typed top-level variables instead of `self`.
pub struct Expression {
    text: String,
    program: Program,
    declared: &'static [&'static str],
    /// The names this expression selects under `variables` (for lazy evaluation).
    variables: Vec<String>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expression").field(&self.text).finish()
    }
}

/// Why an admission expression gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The expression failed (upstream: `expression '<e>' resulted in error: <cause>`).
    Failed(String),
    /// The request's cost budget ran out: no further expression of this evaluation may run.
    OutOfBudget,
}

/// The message upstream gives when an evaluation's budget runs out.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The runtime budget of one policy evaluation (upstream's RuntimeCELCostBudget).
pub const ADMISSION_BUDGET: f64 = RUNTIME_BUDGET;

/// The values an admission expression sees, converted from JSON once per request.
pub struct Activation {
    vars: Vec<(&'static str, Cel)>,
    sizes: Sizes,
}

impl Activation {
    /// Binds `name` to JSON values (`null` for an absent object, as upstream).
    pub fn new(bindings: &[(&'static str, &Value)]) -> Self {
        let (mut len, mut str_len) = (0, 0);
        let vars = bindings
            .iter()
            .map(|(n, v)| {
                measure(v, &mut len, &mut str_len);
                (*n, to_cel(v, None))
            })
            .collect();
        Activation {
            vars,
            sizes: Sizes::Actual {
                len: len.max(1) as f64,
                str_len: str_len.max(1) as f64,
            },
        }
    }

    /// Binds (or rebinds) one variable to a CEL value.
    pub fn set(&mut self, name: &'static str, value: Cel) {
        match self.vars.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name, value)),
        }
    }
}

/// A CEL map of named values (how `variables` is bound).
pub fn cel_map(entries: impl IntoIterator<Item = (String, Cel)>) -> Cel {
    let m: HashMap<Key, Cel> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Cel::Map(Map::from(m))
}

/// Compiles an admission expression that may use the `declared` variables and, under
/// `variables`, the names in `variable_names`. The error is upstream's detail
/// (`compilation failed: ERROR: <input>:1:1: ...`).
pub fn compile_expression(
    text: &str,
    declared: &'static [&'static str],
    variable_names: &[String],
) -> Result<Expression, String> {
    let program = match catch_unwind(|| ENV.compile(text)) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            return Err(format!(
                "compilation failed: {}",
                format_parse_errors(text, &e)
            ));
        }
        Err(_) => return Err("compilation failed: internal error".into()),
    };
    let mut checker = Checker {
        root: &NULL,
        optional_old_self: false,
        sizes: Sizes::Schema,
        source: program.source_info(),
        scope: Vec::new(),
        errors: Vec::new(),
        uses_old_self: false,
        declared,
        variable_names,
        program_errors: Vec::new(),
    };
    checker.check(program.expression());
    if !checker.errors.is_empty() {
        return Err(format!("compilation failed: {}", checker.errors.join("\n")));
    }
    if let Some(e) = checker.program_errors.first() {
        return Err(format!("program instantiation failed: {e}"));
    }
    let mut variables = Vec::new();
    selected_variables(program.expression(), &mut variables);
    Ok(Expression {
        text: text.to_string(),
        program,
        declared,
        variables,
    })
}

/// The fields selected from the identifier `variables` anywhere in `e`.
fn selected_variables(e: &IdedExpr, out: &mut Vec<String>) {
    match &e.expr {
        Expr::Select(sel) => {
            if matches!(&sel.operand.expr, Expr::Ident(v) if v == "variables")
                && !out.contains(&sel.field)
            {
                out.push(sel.field.clone());
            }
            selected_variables(&sel.operand, out);
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                selected_variables(t, out);
            }
            for a in &c.args {
                selected_variables(a, out);
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                selected_variables(x, out);
            }
        }
        Expr::List(l) => {
            for x in &l.elements {
                selected_variables(x, out);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    selected_variables(&me.key, out);
                    selected_variables(&me.value, out);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => selected_variables(&f.value, out),
                    EntryExpr::MapEntry(me) => {
                        selected_variables(&me.key, out);
                        selected_variables(&me.value, out);
                    }
                }
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

impl Expression {
    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The names it selects under `variables`.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Evaluates against `act`, charging its cost bound to `budget` first: a call over
    /// upstream's per-call limit fails, a budget overrun stops the evaluation.
    pub fn evaluate(&self, act: &Activation, budget: &mut f64) -> Result<Cel, EvalError> {
        let mut checker = Checker {
            root: &NULL,
            optional_old_self: false,
            sizes: act.sizes,
            source: self.program.source_info(),
            scope: Vec::new(),
            errors: Vec::new(),
            uses_old_self: false,
            declared: self.declared,
            variable_names: &[],
            program_errors: Vec::new(),
        };
        let cost = checker.check(self.program.expression()).1;
        if cost > PER_CALL_LIMIT {
            return Err(EvalError::Failed(format!(
                "expression '{}' resulted in error: operation cancelled: actual cost limit exceeded",
                self.text
            )));
        }
        if cost > *budget {
            return Err(EvalError::OutOfBudget);
        }
        *budget -= cost;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut ctx = Context::with_env(Arc::clone(&ENV));
            for (name, v) in &act.vars {
                ctx.add_variable_from_value(*name, v.clone());
            }
            self.program.execute(&ctx)
        }))
        .unwrap_or_else(|_| {
            Err(ExecutionError::InternalError(
                "internal error evaluating expression".into(),
            ))
        });
        result.map_err(|e| {
            let cause = match &e {
                ExecutionError::NoSuchOverload(_) => "no such overload".to_string(),
                _ => go_error(&e),
            };
            EvalError::Failed(format!(
                "expression '{}' resulted in error: {cause}",
                self.text
            ))
        })
    }
}

#[path = "cel_types.rs"]
pub mod types;

#[cfg(test)]
#[path = "cel_tests.rs"]
mod tests;
