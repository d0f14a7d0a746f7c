//! Path rules (docs/access.md): a key path template and the operations it allows, compiled once,
//! bound to a token's variables, and matched against paths.
//!
//! A template is written like an alias template (aliases/template.rs): `/team-{team}/**`,
//! `/team-{team}/doc-*`, `/public-1/**`. Each element is
//!
//! | element | matches |
//! | --- | --- |
//! | `ns-7`, `ns-alice` | that element exactly (the id typed as in a key path) |
//! | `ns-{name}` | namespace `ns` with the id bound to the token's variable `name` |
//! | `ns-*` | namespace `ns` with any id |
//! | `ns` | namespace `ns` without an id |
//! | `*` | any one element |
//!
//! and a last element `**` matches the path so far and everything below it, so `/team-7/**` is
//! `/team-7` and its subtree and `/**` is every path. A variable's value is an id, read as a key
//! path reads one: `7` and `"7"` are the integer 7, `"alice"` a string; a string that is not its
//! id's canonical text (`"007"`, an escape, an upper-case UUID) is no id. A variable the token does
//! not bind (or binds to what is not an id) makes its rule match nothing: a rule fails closed.

use crate::aliases::template::split_segments;
use crate::model::error::Error;
use pathdb_keys::{Element, Id, Int, KeyPath, Namespace};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most rules in one role.
pub const MAX_RULES: usize = 100;
/// The longest rule template, in bytes.
const MAX_TEMPLATE_BYTES: usize = 1024;

/// What a rule allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// get, get_many, list, count, history, versions, feed, export of a subtree.
    Read,
    /// put, create, patch, delete, move and copy ends, import lines, transaction writes.
    Write,
    /// Namespace definitions, roles, tokens, backups: only on `/**`.
    Admin,
}

impl Op {
    /// The operation's name, as rules and refusals write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Admin => "admin",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Op::Read => 1,
            Op::Write => 2,
            Op::Admin => 4,
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule of a role: a path template and what it allows there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The template (see the module's docs).
    pub path: String,
    /// The operations allowed on the paths it matches.
    pub allow: Vec<Op>,
}

/// A compiled template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPattern {
    elements: Vec<Pattern<IdPattern>>,
    /// A trailing `**`: the path so far and its subtree.
    subtree: bool,
}

/// One element of a template; `I` says how its id is matched (by name before binding).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern<I> {
    /// `*`.
    Any,
    /// A namespace and an id pattern.
    Namespace(Namespace, I),
}

/// The id part of a template element.
#[derive(Clone, Debug, PartialEq, Eq)]
enum IdPattern {
    /// `ns`: no id.
    None,
    /// `ns-*`.
    Any,
    /// `ns-7`.
    Fixed(Id),
    /// `ns-{name}`.
    Var(String),
}

/// The id part of a bound element.
#[derive(Clone, Debug, PartialEq, Eq)]
enum BoundId {
    None,
    Any,
    Fixed(Id),
    /// A variable the token does not bind to an id: matches nothing.
    Never,
}

impl PathPattern {
    /// Compiles a template.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming the template and what is wrong with it.
    pub fn parse(text: &str) -> Result<PathPattern, Error> {
        let bad = |why: &str| Error::InvalidRequest(format!("rule path {text:?}: {why}"));
        if text.len() > MAX_TEMPLATE_BYTES {
            return Err(bad(&format!("longer than {MAX_TEMPLATE_BYTES} bytes")));
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(bad(
                "a rule path is a key path template: it starts with `/`",
            ));
        };
        let segments = split_segments(rest);
        let mut elements = Vec::with_capacity(segments.len());
        let mut subtree = false;
        for (i, segment) in segments.iter().enumerate() {
            if *segment == "**" {
                if i + 1 != segments.len() {
                    return Err(bad("`**` may only be the last element"));
                }
                subtree = true;
                continue;
            }
            elements.push(parse_element(segment).map_err(|why| bad(&why))?);
        }
        if elements.is_empty() && !subtree {
            return Err(bad("a rule path names at least one element, or is `/**`"));
        }
        Ok(PathPattern { elements, subtree })
    }

    /// The variables the template uses, in order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.elements.iter().filter_map(|e| match e {
            Pattern::Namespace(_, IdPattern::Var(name)) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Whether this is `/**`.
    pub fn is_everything(&self) -> bool {
        self.subtree && self.elements.is_empty()
    }

    /// The template with its variables bound by `lookup` (a variable's value by its name).
    pub fn bind(&self, lookup: &dyn Fn(&str) -> Option<Value>) -> BoundPattern {
        let elements = self
            .elements
            .iter()
            .map(|e| match e {
                Pattern::Any => Pattern::Any,
                Pattern::Namespace(ns, id) => Pattern::Namespace(
                    ns.clone(),
                    match id {
                        IdPattern::None => BoundId::None,
                        IdPattern::Any => BoundId::Any,
                        IdPattern::Fixed(id) => BoundId::Fixed(id.clone()),
                        IdPattern::Var(name) => lookup(name)
                            .as_ref()
                            .and_then(id_of_value)
                            .map_or(BoundId::Never, BoundId::Fixed),
                    },
                ),
            })
            .collect();
        BoundPattern {
            elements,
            subtree: self.subtree,
        }
    }
}

/// One element of a template: `*`, `ns`, `ns-*`, `ns-{var}` or `ns-<id>`.
fn parse_element(segment: &str) -> Result<Pattern<IdPattern>, String> {
    if segment == "*" {
        return Ok(Pattern::Any);
    }
    if segment.is_empty() {
        return Err("an empty element (two `/` in a row, or a trailing `/`)".into());
    }
    let (namespace, id) = match segment.split_once('-') {
        Some((ns, id)) => (ns, Some(id)),
        None => (segment, None),
    };
    let ns =
        Namespace::new(namespace).map_err(|rule| format!("namespace {namespace:?}: {rule}"))?;
    let id = match id {
        None => IdPattern::None,
        Some("*") => IdPattern::Any,
        Some(id) => match id.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
            Some(name) => {
                let valid = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
                if !valid {
                    return Err(format!(
                        "variable {{{name}}}: a name of letters, digits, `_`, `-` and `.`"
                    ));
                }
                IdPattern::Var(name.to_owned())
            }
            None => {
                let path: KeyPath = format!("/{segment}")
                    .parse()
                    .map_err(|e| format!("element {segment:?}: {e}"))?;
                match path.last().id() {
                    Some(id) if path.len() == 1 => IdPattern::Fixed(id.clone()),
                    _ => return Err(format!("element {segment:?} is not one element")),
                }
            }
        },
    };
    Ok(Pattern::Namespace(ns, id))
}

/// The id a variable's value stands for: an integer, or a string read as a key path reads an id.
pub fn id_of_value(value: &Value) -> Option<Id> {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(Id::Int(Int::from(i)))
            } else {
                n.as_u64().map(|u| Id::Int(Int::from(u)))
            }
        }
        Value::String(s) if !s.is_empty() && !s.contains('/') => {
            // Only a string that is the id's canonical text: `"7"` is 7, but `"007"`, an
            // escaped `"al%69ce"` or an upper-case UUID is no id. Two different claims (a JWT's
            // `sub`) must never name one path.
            let text = format!("/x-{s}");
            let path: KeyPath = text.parse().ok()?;
            (path.len() == 1 && path.to_string() == text).then(|| path.last().id().cloned())?
        }
        _ => None,
    }
}

/// A template with its variables bound: what a token's rules are matched with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundPattern {
    elements: Vec<Pattern<BoundId>>,
    subtree: bool,
}

#[inline(always)]
fn element_matches(pattern: &Pattern<BoundId>, element: &Element) -> bool {
    match pattern {
        Pattern::Any => true,
        Pattern::Namespace(ns, id) => {
            ns == element.namespace()
                && match (id, element.id()) {
                    (BoundId::None, None) | (BoundId::Any, Some(_)) => true,
                    (BoundId::Fixed(want), Some(have)) => want == have,
                    _ => false,
                }
        }
    }
}

impl BoundPattern {
    /// Whether the first `n` elements of the pattern match the first `n` of `elements`.
    #[inline]
    fn leads(&self, elements: &[Element]) -> bool {
        self.elements
            .iter()
            .zip(elements)
            .all(|(p, e)| element_matches(p, e))
    }

    /// Whether `path` matches.
    #[inline]
    pub fn matches(&self, path: &KeyPath) -> bool {
        let elements = path.elements();
        let (n, len) = (self.elements.len(), elements.len());
        let long_enough = if self.subtree { len >= n } else { len == n };
        if !long_enough {
            return false;
        }
        // A plain loop, inlined: checked for every rule of a token on every path it touches.
        for (pattern, element) in self.elements.iter().zip(elements) {
            if !element_matches(pattern, element) {
                return false;
            }
        }
        true
    }

    /// Whether every path of `prefix`'s subtree (`prefix` and everything below it) matches.
    pub fn covers_subtree(&self, prefix: &KeyPath) -> bool {
        self.subtree
            && self.elements.len() <= full_elements(prefix)
            && self.leads(prefix.elements())
    }

    /// Whether every direct child of `parent` matches.
    pub fn covers_children(&self, parent: &KeyPath) -> bool {
        let (n, len) = (self.elements.len(), parent.len());
        if self.subtree && n <= full_elements(parent) {
            return self.leads(parent.elements());
        }
        if len != full_elements(parent) {
            // An element without an id has no children.
            return false;
        }
        n == len + 1 && self.elements[len] == Pattern::Any && self.leads(parent.elements())
    }

    /// Whether some path at or below `path` may match: its elements agree with the pattern's as
    /// far as both go, and the pattern goes on at least as far as `path` or is a subtree.
    pub fn reaches(&self, path: &KeyPath) -> bool {
        (self.subtree || self.elements.len() >= path.len()) && self.leads(path.elements())
    }

    /// Whether this is `/**`: every path.
    pub fn is_everything(&self) -> bool {
        self.subtree && self.elements.is_empty()
    }
}

/// The elements of `prefix` a subtree pattern may end at: all of them, but not a last element
/// without an id, whose "subtree" in a listing is every id of its namespace (`/team-7/doc` lists
/// `/team-7/doc-1`...), which a pattern ending in that element (`/team-7/doc/**`) does not cover.
fn full_elements(prefix: &KeyPath) -> usize {
    if prefix.last().id().is_none() {
        prefix.len() - 1
    } else {
        prefix.len()
    }
}

/// A compiled rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledRule {
    /// The template.
    pub pattern: PathPattern,
    allow: u8,
}

impl CompiledRule {
    /// Compiles `rule`.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`]: a bad template, no operation, `admin` elsewhere than `/**`.
    pub fn compile(rule: &Rule) -> Result<CompiledRule, Error> {
        let pattern = PathPattern::parse(&rule.path)?;
        if rule.allow.is_empty() {
            return Err(Error::InvalidRequest(format!(
                "rule {:?} allows nothing: list read, write or admin",
                rule.path
            )));
        }
        if rule.allow.contains(&Op::Admin) && !pattern.is_everything() {
            return Err(Error::InvalidRequest(format!(
                "rule {:?}: admin (definitions, roles, tokens, backups) concerns the whole database, so it is allowed only on `/**`",
                rule.path
            )));
        }
        let allow = rule.allow.iter().fold(0, |bits, op| bits | op.bit());
        Ok(CompiledRule { pattern, allow })
    }
}

/// What one principal may do: its role's rules bound to its variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grant {
    /// Each rule's pattern, the operations it allows, and the [`tag`] of the namespace its first
    /// element needs (`None`: any group): a rule for another group is passed over with one
    /// comparison of integers.
    rules: Vec<(BoundPattern, u8, Option<u64>)>,
}

/// A namespace's length and first seven bytes as one integer: equal namespaces have equal tags
/// (unequal ones may too: the full match decides then).
#[inline(always)]
fn tag(namespace: &Namespace) -> u64 {
    let bytes = namespace.as_str().as_bytes();
    let mut word = [0u8; 8];
    let n = bytes.len().min(7);
    word[..n].copy_from_slice(&bytes[..n]);
    word[7] = bytes.len().min(255) as u8;
    u64::from_ne_bytes(word)
}

/// The tag of the namespace a pattern's first element needs.
fn first_tag(pattern: &BoundPattern) -> Option<u64> {
    match pattern.elements.first()? {
        Pattern::Namespace(ns, _) => Some(tag(ns)),
        Pattern::Any => None,
    }
}

impl Grant {
    /// The grant of `rules` with variables from `lookup`.
    pub fn new(rules: &[CompiledRule], lookup: &dyn Fn(&str) -> Option<Value>) -> Grant {
        Grant {
            rules: rules
                .iter()
                .map(|r| {
                    let pattern = r.pattern.bind(lookup);
                    let first = first_tag(&pattern);
                    (pattern, r.allow, first)
                })
                .collect(),
        }
    }

    /// A grant that allows `ops` everywhere.
    pub fn everything(ops: &[Op]) -> Grant {
        let pattern = BoundPattern {
            elements: Vec::new(),
            subtree: true,
        };
        Grant {
            rules: vec![(
                pattern,
                ops.iter().fold(0, |bits, op| bits | op.bit()),
                None,
            )],
        }
    }

    fn with(&self, op: Op) -> impl Iterator<Item = &BoundPattern> {
        self.rules
            .iter()
            .filter(move |(_, allow, _)| allow & op.bit() != 0)
            .map(|(p, _, _)| p)
    }

    /// Whether `op` is allowed on `path`.
    pub fn allows(&self, op: Op, path: &KeyPath) -> bool {
        let (bit, group) = (op.bit(), tag(path.group().namespace()));
        // A plain loop: the check of every path a request touches; a rule of another op or
        // another group's namespace costs two integer comparisons.
        for (pattern, allow, first) in &self.rules {
            if allow & bit != 0 && first.is_none_or(|t| t == group) && pattern.matches(path) {
                return true;
            }
        }
        false
    }

    /// Whether `op` is allowed on every path of `prefix`'s subtree.
    pub fn covers_subtree(&self, op: Op, prefix: &KeyPath) -> bool {
        self.with(op).any(|p| p.covers_subtree(prefix))
    }

    /// Whether `op` is allowed on every direct child of `parent`.
    pub fn covers_children(&self, op: Op, parent: &KeyPath) -> bool {
        self.with(op).any(|p| p.covers_children(parent))
    }

    /// Whether `op` may be allowed on some path at or below `path`.
    pub fn reaches(&self, op: Op, path: &KeyPath) -> bool {
        self.with(op).any(|p| p.reaches(path))
    }

    /// Whether `op` is allowed on every path (`admin` is only ever allowed so).
    pub fn everywhere(&self, op: Op) -> bool {
        self.with(op).any(BoundPattern::is_everything)
    }

    /// Whether `op` is allowed anywhere.
    pub fn anywhere(&self, op: Op) -> bool {
        self.with(op).next().is_some()
    }
}

#[cfg(test)]
mod test;
