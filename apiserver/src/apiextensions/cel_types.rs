//! Static type warnings of admission-policy expressions (upstream's ValidatingAdmissionPolicy
//! type checker, which fills `status.typeChecking`): `object` and `oldObject` are typed by the
//! matched kind's OpenAPI schema, `params` by the `paramKind`'s, `variables.<name>` by its
//! expression, literals by themselves, and an operator applied to types it
//! has no overload for is reported as cel-go words it. Anything dynamic is not checked, so a
//! warning is only given where upstream gives one too.

use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::{Expression, format_issue};

/// Resolves a Swagger `#/definitions/<name>` reference.
pub type Resolve = dyn Fn(&str) -> Option<&'static Value>;

/// The static type of a sub-expression, as far as it is known.
#[derive(Clone, Copy)]
enum T {
    Int,
    Uint,
    Double,
    String,
    Bool,
    Bytes,
    Null,
    List,
    /// An object described by a schema node.
    Object(&'static Value),
    Dyn,
}

impl T {
    fn name(self) -> Option<&'static str> {
        Some(match self {
            T::Int => "int",
            T::Uint => "uint",
            T::Double => "double",
            T::String => "string",
            T::Bool => "bool",
            T::Bytes => "bytes",
            T::Null => "null_type",
            T::List | T::Object(_) | T::Dyn => return None,
        })
    }

    fn numeric(self) -> bool {
        matches!(self, T::Int | T::Uint | T::Double)
    }
}

/// What a policy's top-level variables are known to be: `object`/`oldObject` of the matched
/// kind's schema, `params` of the `paramKind`'s, and each of `variables` of its expression's type.
#[derive(Clone, Default)]
pub struct Declarations {
    object: Option<&'static Value>,
    params: Option<&'static Value>,
    variables: Vec<(String, T)>,
}

impl Declarations {
    pub fn new(object: Option<&'static Value>, params: Option<&'static Value>) -> Self {
        Declarations {
            object,
            params,
            variables: Vec::new(),
        }
    }

    /// Types a variable's expression (seeing the variables before it) and declares the result
    /// as `variables.<name>`.
    pub fn declare_variable(&mut self, name: &str, expr: &Expression, resolve: &Resolve) {
        let t = Typer::new(expr, self, resolve).infer(expr.program.expression());
        self.variables.push((name.to_string(), t));
    }
}

struct Typer<'a> {
    expr: &'a Expression,
    resolve: &'a Resolve,
    declared: &'a Declarations,
    /// Comprehension variables in scope (dynamic).
    scope: Vec<String>,
    warnings: Vec<String>,
}

/// The warnings of `expr` under `declared`.
pub fn warnings(expr: &Expression, declared: &Declarations, resolve: &Resolve) -> Vec<String> {
    let mut typer = Typer::new(expr, declared, resolve);
    typer.infer(expr.program.expression());
    typer.warnings
}

impl<'a> Typer<'a> {
    fn new(expr: &'a Expression, declared: &'a Declarations, resolve: &'a Resolve) -> Self {
        Typer {
            expr,
            resolve,
            declared,
            scope: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Follows `$ref`s (and a single-element `allOf`) to the node that describes the value.
    fn deref(&self, mut node: &'static Value) -> &'static Value {
        for _ in 0..16 {
            let next = node
                .get("$ref")
                .and_then(Value::as_str)
                .or_else(|| node.pointer("/allOf/0/$ref").and_then(Value::as_str));
            match next.and_then(|r| (self.resolve)(r.trim_start_matches("#/definitions/"))) {
                Some(n) => node = n,
                None => break,
            }
        }
        node
    }

    /// The type of a value described by `node`.
    fn of_schema(&self, node: &'static Value) -> T {
        if node
            .get("$ref")
            .and_then(Value::as_str)
            .is_some_and(|r| r.ends_with(".IntOrString") || r.ends_with(".Quantity"))
        {
            return T::Dyn;
        }
        let node = self.deref(node);
        if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            || node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        {
            return T::Dyn;
        }
        match node.get("type").and_then(Value::as_str) {
            Some("integer") => T::Int,
            Some("number") => T::Double,
            Some("boolean") => T::Bool,
            // date-time strings are timestamps and byte strings bytes in CEL: left dynamic.
            Some("string") if node.get("format").is_none() => T::String,
            Some("array") => T::List,
            Some("object") if node.get("properties").is_some() => T::Object(node),
            _ => T::Dyn,
        }
    }

    fn warn(&mut self, id: u64, message: String) {
        self.warnings
            .push(format_issue(self.expr.program.source_info(), id, &message));
    }

    fn infer(&mut self, e: &IdedExpr) -> T {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => T::Bool,
                LiteralValue::Bytes(_) => T::Bytes,
                LiteralValue::Double(_) => T::Double,
                LiteralValue::Int(_) => T::Int,
                LiteralValue::Null => T::Null,
                LiteralValue::String(_) => T::String,
                LiteralValue::UInt(_) => T::Uint,
            },
            Expr::Ident(name) => match name.as_str() {
                _ if self.scope.iter().any(|s| s == name) => T::Dyn,
                "object" | "oldObject" => self.declared.object.map_or(T::Dyn, T::Object),
                "params" => self.declared.params.map_or(T::Dyn, T::Object),
                _ => T::Dyn,
            },
            Expr::Select(sel)
                if !sel.test
                    && matches!(&sel.operand.expr, Expr::Ident(v) if v == "variables")
                    && !self.scope.iter().any(|s| s == "variables") =>
            {
                self.declared
                    .variables
                    .iter()
                    .find(|(name, _)| *name == sel.field)
                    .map_or(T::Dyn, |(_, t)| *t)
            }
            Expr::Select(sel) => {
                let operand = self.infer(&sel.operand);
                if sel.test {
                    return T::Bool;
                }
                match operand {
                    T::Object(node) => match node.pointer(&format!("/properties/{}", sel.field)) {
                        Some(field) => self.of_schema(field),
                        None => {
                            self.warn(e.id, format!("undefined field '{}'", sel.field));
                            T::Dyn
                        }
                    },
                    _ => T::Dyn,
                }
            }
            Expr::Call(call) => {
                if let Some(t) = &call.target {
                    self.infer(t);
                }
                let args: Vec<T> = call.args.iter().map(|a| self.infer(a)).collect();
                self.call(e.id, &call.func_name, call.target.is_some(), &args)
            }
            Expr::Comprehension(c) => {
                self.infer(&c.iter_range);
                self.infer(&c.accu_init);
                self.scope.push(c.iter_var.clone());
                if let Some(v) = &c.iter_var2 {
                    self.scope.push(v.clone());
                }
                self.scope.push(c.accu_var.clone());
                for x in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.infer(x);
                }
                self.scope
                    .truncate(self.scope.len() - 2 - usize::from(c.iter_var2.is_some()));
                T::Dyn
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.infer(x);
                }
                T::List
            }
            Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => T::Dyn,
        }
    }

    /// The result of an operator or function, warning when `args` have no overload.
    fn call(&mut self, id: u64, func: &str, member: bool, args: &[T]) -> T {
        let pair = match args {
            [a, b] if !member => Some((*a, *b)),
            _ => None,
        };
        let (ok, result) = match (func, pair) {
            ("_<_" | "_<=_" | "_>_" | "_>=_", Some((a, b))) => {
                let comparable = (a.numeric() && b.numeric())
                    || matches!(
                        (a, b),
                        (T::String, T::String) | (T::Bytes, T::Bytes) | (T::Bool, T::Bool)
                    );
                (comparable, T::Bool)
            }
            ("_+_", Some((a, b))) => {
                let same = std::mem::discriminant(&a) == std::mem::discriminant(&b);
                let addable = matches!(
                    a,
                    T::Int | T::Uint | T::Double | T::String | T::Bytes | T::List
                );
                (same && addable, a)
            }
            ("_-_" | "_*_" | "_/_", Some((a, b))) => (
                std::mem::discriminant(&a) == std::mem::discriminant(&b) && a.numeric(),
                a,
            ),
            ("_%_", Some((a, b))) => (
                std::mem::discriminant(&a) == std::mem::discriminant(&b)
                    && matches!(a, T::Int | T::Uint),
                a,
            ),
            ("_&&_" | "_||_" | "!_" | "_==_" | "_!=_" | "@in", _) => (true, T::Bool),
            ("size", _) => (true, T::Int),
            ("string", _) => (true, T::String),
            ("int", _) => (true, T::Int),
            ("double", _) => (true, T::Double),
            _ => (true, T::Dyn),
        };
        if !ok && let Some((a, b)) = pair {
            // Only concrete types are reported: a dynamic side may match at run time.
            if let (Some(x), Some(y)) = (a.name(), b.name()) {
                self.warn(
                    id,
                    format!("found no matching overload for '{func}' applied to '({x}, {y})'"),
                );
                return T::Dyn;
            }
        }
        if ok { result } else { T::Dyn }
    }
}
