//! Kubernetes' CEL authorization library (`kubernetes.authz`) for admission expressions: the
//! `authorizer` variable and `authorizer.requestResource`, with upstream's functions
//! (`path`, `group`, `serviceAccount`, `resource`, `subresource`, `namespace`, `name`,
//! `fieldSelector`, `labelSelector`, `check`, `allowed`, `reason`, `errored`, `error`). A check
//! asks this server's authorizer (system:masters, the Node authorizer, RBAC) about the user who
//! sent the request, as upstream's unconditional authorizer does.

use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value as Cel};

use crate::auth::{Attributes, Decision, UserInfo};

/// The functions of the library, for the expression checker.
pub const FUNCTIONS: &[&str] = &[
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// What answers a check: this server's authorizer.
pub trait Authorize: Send + Sync {
    fn authorize(&self, attrs: &Attributes) -> Decision;
}

impl Authorize for crate::auth::rbac::RbacAuthorizer {
    fn authorize(&self, attrs: &Attributes) -> Decision {
        crate::auth::rbac::RbacAuthorizer::authorize(self, attrs)
    }
}

impl std::fmt::Debug for dyn Authorize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorize")
    }
}

/// `kubernetes.authorization.Authorizer`: whom checks are about.
#[derive(Clone)]
struct AuthorizerVal {
    authz: Arc<dyn Authorize>,
    user: UserInfo,
}

/// `kubernetes.authorization.PathCheck`.
#[derive(Clone)]
struct PathCheck {
    authorizer: AuthorizerVal,
    path: String,
}

/// `kubernetes.authorization.GroupCheck`.
#[derive(Clone)]
struct GroupCheck {
    authorizer: AuthorizerVal,
    group: String,
}

/// `kubernetes.authorization.ResourceCheck`.
#[derive(Clone)]
struct ResourceCheck {
    authorizer: AuthorizerVal,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
}

/// `kubernetes.authorization.Decision`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DecisionVal {
    allowed: bool,
    reason: String,
}

macro_rules! opaque {
    ($t:ty, $name:literal) => {
        impl Opaque for $t {
            fn runtime_type_name(&self) -> &str {
                $name
            }
        }
    };
}

/// Checks compare by what they would ask (the authorizer itself is one per server).
impl PartialEq for AuthorizerVal {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user
    }
}
impl Eq for AuthorizerVal {}
impl std::fmt::Debug for AuthorizerVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Authorizer({})", self.user.name)
    }
}
macro_rules! by_fields {
    ($t:ty, $($field:ident),+) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                true $(&& self.$field == other.$field)+
            }
        }
        impl Eq for $t {}
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t))$(.field(stringify!($field), &self.$field))+.finish()
            }
        }
    };
}
by_fields!(PathCheck, authorizer, path);
by_fields!(GroupCheck, authorizer, group);
by_fields!(
    ResourceCheck,
    authorizer,
    group,
    resource,
    subresource,
    namespace,
    name
);
opaque!(AuthorizerVal, "kubernetes.authorization.Authorizer");
opaque!(PathCheck, "kubernetes.authorization.PathCheck");
opaque!(GroupCheck, "kubernetes.authorization.GroupCheck");
opaque!(ResourceCheck, "kubernetes.authorization.ResourceCheck");
opaque!(DecisionVal, "kubernetes.authorization.Decision");

/// The `authorizer` and `authorizer.requestResource` values for a request by `user` on the
/// given resource.
pub fn variables(
    authz: Arc<dyn Authorize>,
    user: &UserInfo,
    request: (&str, &str, &str, &str, &str),
) -> [(&'static str, Cel); 2] {
    let authorizer = AuthorizerVal {
        authz,
        user: user.clone(),
    };
    let (group, resource, subresource, namespace, name) = request;
    let request_resource = ResourceCheck {
        authorizer: authorizer.clone(),
        group: group.to_string(),
        resource: resource.to_string(),
        subresource: subresource.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    [
        ("authorizer", Cel::Opaque(Arc::new(authorizer))),
        (
            "authorizer.requestResource",
            Cel::Opaque(Arc::new(request_resource)),
        ),
    ]
}

/// Declares the library's member functions in `env`.
pub fn register(env: &mut Env) {
    let one: [(&str, cel::common::functions::Function); 8] = [
        ("path", path),
        ("group", group),
        ("resource", resource),
        ("subresource", subresource),
        ("namespace", namespace),
        ("name", name),
        ("fieldSelector", selector_ignored),
        ("labelSelector", selector_ignored),
    ];
    for (n, f) in one {
        declare(env, n, vec![STRING_TYPE], f);
    }
    declare(env, "check", vec![STRING_TYPE], check);
    declare(
        env,
        "serviceAccount",
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    );
    for (n, f) in [
        ("allowed", allowed as cel::common::functions::Function),
        ("reason", reason),
        ("errored", errored),
        ("error", error),
    ] {
        declare(env, n, Vec::new(), f);
    }
}

fn declare(
    env: &mut Env,
    name: &str,
    args: Vec<cel::common::types::Type>,
    f: cel::common::functions::Function,
) {
    let id = format!("k8s_authz_{name}");
    if let Err(e) = env.add_member_overload(name, &id, DYN_TYPE, args, f) {
        tracing::warn!("CEL function {name}: {e}");
    }
}

fn value(arg: &CowVal<'_, '_>) -> Result<Cel, ExecutionError> {
    Cel::try_from(arg.as_ref())
        .map_err(|_| ExecutionError::function_error("authorizer", "unsupported value"))
}

/// The receiver as `T` and the string arguments.
fn receiver<T: Clone + 'static>(
    args: &[CowVal<'_, '_>],
) -> Result<(T, Vec<String>), ExecutionError> {
    let mut vals = args.iter().map(value).collect::<Result<Vec<_>, _>>()?;
    if vals.is_empty() {
        return Err(ExecutionError::missing_argument_or_target());
    }
    let target = vals.remove(0);
    let Cel::Opaque(o) = &target else {
        return Err(ExecutionError::unsupported_target_type(target));
    };
    let Some(t) = o.downcast_ref::<T>() else {
        return Err(ExecutionError::unsupported_target_type(target.clone()));
    };
    let strings = vals
        .into_iter()
        .map(|v| match v {
            Cel::String(s) => Ok(s.to_string()),
            other => Err(ExecutionError::unsupported_target_type(other)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((t.clone(), strings))
}

fn out<'b, 'v>(v: Cel) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let b: Box<dyn cel::common::value::Val> = v
        .try_into()
        .map_err(|_| ExecutionError::function_error("authorizer", "unsupported value"))?;
    Ok(CowVal::from(b))
}

fn opaque<'b, 'v, T: Opaque + 'static>(t: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    out(Cel::Opaque(Arc::new(t)))
}

fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (authorizer, s) = receiver::<AuthorizerVal>(&args)?;
    let path = s.into_iter().next().unwrap_or_default();
    if path.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "path",
            "path must not be empty",
        ));
    }
    opaque(PathCheck { authorizer, path })
}

fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (authorizer, s) = receiver::<AuthorizerVal>(&args)?;
    let group = s.into_iter().next().unwrap_or_default();
    opaque(GroupCheck { authorizer, group })
}

fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (authorizer, s) = receiver::<AuthorizerVal>(&args)?;
    let (namespace, name) = (
        s.first().cloned().unwrap_or_default(),
        s.get(1).cloned().unwrap_or_default(),
    );
    if !k1s_apimachinery::validation::is_dns1123_subdomain(&name).is_empty() {
        return Err(ExecutionError::function_error(
            "serviceAccount",
            "Invalid service account name",
        ));
    }
    if !k1s_apimachinery::validation::is_dns1123_label(&namespace).is_empty() {
        return Err(ExecutionError::function_error(
            "serviceAccount",
            "Invalid service account namespace",
        ));
    }
    let user = UserInfo::new(
        format!("system:serviceaccount:{namespace}:{name}"),
        vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ],
    );
    opaque(AuthorizerVal {
        authz: authorizer.authz,
        user,
    })
}

fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (g, s) = receiver::<GroupCheck>(&args)?;
    let resource = s.into_iter().next().unwrap_or_default();
    if resource.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "resource",
            "resource must not be empty",
        ));
    }
    opaque(ResourceCheck {
        authorizer: g.authorizer,
        group: g.group,
        resource,
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
    })
}

/// `subresource`, `namespace` and `name` set one field of a ResourceCheck.
fn with_field<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    set: fn(&mut ResourceCheck, String),
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (mut r, s) = receiver::<ResourceCheck>(&args)?;
    set(&mut r, s.into_iter().next().unwrap_or_default());
    opaque(r)
}

fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_field(args, |r, v| r.subresource = v)
}

fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_field(args, |r, v| r.namespace = v)
}

fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_field(args, |r, v| r.name = v)
}

/// `fieldSelector`/`labelSelector`: accepted, but RBAC does not look at selectors, so the
/// check is the same without them (as upstream with an authorizer that ignores them).
fn selector_ignored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (r, _) = receiver::<ResourceCheck>(&args)?;
    opaque(r)
}

fn check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let verb = |s: Vec<String>| s.into_iter().next().unwrap_or_default();
    let (authorizer, attrs) = if let Ok((r, s)) = receiver::<ResourceCheck>(&args) {
        let attrs = Attributes {
            user: r.authorizer.user.clone(),
            verb: verb(s),
            is_resource_request: true,
            namespace: r.namespace,
            api_group: r.group,
            api_version: "*".into(),
            resource: r.resource,
            subresource: r.subresource,
            name: r.name,
            path: String::new(),
        };
        (r.authorizer, attrs)
    } else {
        let (p, s) = receiver::<PathCheck>(&args)?;
        let attrs = Attributes {
            user: p.authorizer.user.clone(),
            verb: verb(s),
            is_resource_request: false,
            path: p.path,
            ..Default::default()
        };
        (p.authorizer, attrs)
    };
    let (allowed, reason) = match authorizer.authz.authorize(&attrs) {
        Decision::Allow(r) => (true, r),
        Decision::Deny(r) | Decision::NoOpinion(r) => (false, r),
    };
    opaque(DecisionVal { allowed, reason })
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (d, _) = receiver::<DecisionVal>(&args)?;
    out(Cel::Bool(d.allowed))
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (d, _) = receiver::<DecisionVal>(&args)?;
    out(Cel::String(Arc::new(d.reason)))
}

/// This server's authorizer reads an in-memory cache: a check never errors.
fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    receiver::<DecisionVal>(&args)?;
    out(Cel::Bool(false))
}

fn error<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    receiver::<DecisionVal>(&args)?;
    out(Cel::String(Arc::new(String::new())))
}
