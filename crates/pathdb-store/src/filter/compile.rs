//! Compiling a filter: the limits (length, nesting), then CEL's parser, then the names it uses.

use crate::model::error::Error;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::{Env, Program};
use std::fmt;
use std::sync::{Arc, LazyLock};

/// The longest filter, in bytes.
pub const MAX_FILTER_BYTES: usize = 4096;
/// The deepest a filter nests: brackets (`(`, `[`, `{`) inside each other, and the depth of its
/// expression tree (each operator, call, member or index is a level: `a + b + c` is 3 deep).
pub const MAX_FILTER_DEPTH: usize = 32;
/// The stack the parser runs on: a nesting level takes about 150 KiB of it in a debug build (a
/// tenth in release), and CEL's parser recurses without a bound of its own.
const COMPILE_STACK: usize = 32 << 20;

/// The names a filter sees (docs/filters.md).
pub(super) const VARIABLES: [&str; 6] = [
    "value",
    "path",
    "ids",
    "version",
    "created_at",
    "modified_at",
];

/// CEL's standard functions and macros, which every filter shares.
pub(super) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(Env::stdlib()));

/// A compiled filter: cheap to clone (shared), compared by its text.
#[derive(Clone)]
pub struct Filter(Arc<Compiled>);

pub(super) struct Compiled {
    pub(super) source: String,
    pub(super) program: Program,
    /// Which of [`VARIABLES`] the filter uses: only those are made for each item.
    pub(super) uses: [bool; VARIABLES.len()],
    /// The members of `value` the filter reads, when it reads `value` only through them
    /// (`value.status`, `has(value.total)`): only those are made of each item's value.
    /// `None`: it uses `value` whole (`size(value)`, `value == {...}`).
    pub(super) value_members: Option<Vec<String>>,
}

impl Filter {
    /// Compiles `source`.
    ///
    /// # Errors
    /// [`Error::InvalidFilter`] with the position and the reason: a filter that is empty, longer
    /// than [`MAX_FILTER_BYTES`], nests deeper than [`MAX_FILTER_DEPTH`], does not parse, or uses
    /// a name other than the item's (`value`, `path`, `ids`, `version`, `created_at`,
    /// `modified_at`) and its comprehensions' variables.
    pub fn compile(source: &str) -> Result<Filter, Error> {
        if source.len() > MAX_FILTER_BYTES {
            // Where the limit falls, in characters.
            let at = source
                .char_indices()
                .take_while(|(i, _)| *i < MAX_FILTER_BYTES)
                .count();
            return Err(invalid(
                at,
                format!(
                    "a filter is at most {MAX_FILTER_BYTES} bytes; this one is {}",
                    source.len()
                ),
            ));
        }
        if source.trim().is_empty() {
            return Err(invalid(0, "the filter is empty".into()));
        }
        if let Some(at) = too_deep_brackets(source) {
            return Err(invalid(
                at,
                format!("brackets nest deeper than {MAX_FILTER_DEPTH}"),
            ));
        }
        let owned = source.to_owned();
        // Everything that recurses over the tree, dropping it included, runs on the grown stack.
        let compiled = stacker::grow(COMPILE_STACK, move || {
            let program = Program::compile(&owned).map_err(|errors| {
                let first = errors.errors.into_iter().next();
                match first {
                    Some(e) => {
                        let at = position_of_line_column(&owned, e.pos.0, e.pos.1);
                        invalid(at, parse_reason(&e.msg))
                    }
                    None => invalid(0, "the filter does not parse".into()),
                }
            })?;
            let root = program.expression();
            if let Some(id) = deeper_than(root, MAX_FILTER_DEPTH) {
                let at = program
                    .source_info()
                    .offset_for(id)
                    .map_or(0, |(start, _)| start as usize);
                return Err(invalid(
                    at,
                    format!("the expression nests deeper than {MAX_FILTER_DEPTH}"),
                ));
            }
            let mut unknown = None;
            let mut uses = [false; VARIABLES.len()];
            names(
                root,
                &mut |name, id| match VARIABLES.iter().position(|v| *v == name) {
                    Some(i) => uses[i] = true,
                    None => {
                        unknown.get_or_insert((name.to_owned(), id));
                    }
                },
            );
            if let Some((name, id)) = unknown {
                let at = program
                    .source_info()
                    .offset_for(id)
                    .map_or(0, |(start, _)| start as usize);
                return Err(invalid(
                    at,
                    format!(
                        "unknown name `{name}`: a filter sees value, path, ids, version, \
                         created_at and modified_at"
                    ),
                ));
            }
            Ok(Compiled {
                value_members: value_members(root),
                source: owned,
                program,
                uses,
            })
        })?;
        Ok(Filter(Arc::new(compiled)))
    }

    /// The filter's text, as it was compiled.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    pub(super) fn compiled(&self) -> &Compiled {
        &self.0
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Filter").field(&self.0.source).finish()
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.0.source == other.0.source
    }
}

impl Eq for Filter {}

impl std::str::FromStr for Filter {
    type Err = Error;

    fn from_str(source: &str) -> Result<Filter, Error> {
        Filter::compile(source)
    }
}

fn invalid(position: usize, reason: String) -> Error {
    Error::InvalidFilter { position, reason }
}

/// CEL's message without its parser's own phrasing of where.
fn parse_reason(msg: &str) -> String {
    let msg = msg.trim();
    if msg.is_empty() {
        "the filter does not parse".into()
    } else {
        msg.to_owned()
    }
}

/// The character offset of a 1-based line and a 1-based column (CEL's parser's positions).
fn position_of_line_column(source: &str, line: isize, column: isize) -> usize {
    let line = usize::try_from(line.max(1) - 1).unwrap_or(0);
    let column = usize::try_from(column.max(1) - 1).unwrap_or(0);
    let before: usize = source
        .split_inclusive('\n')
        .take(line)
        .map(|l| l.chars().count())
        .sum();
    (before + column).min(source.chars().count())
}

/// Where brackets first nest deeper than [`MAX_FILTER_DEPTH`] (a character offset), skipping
/// string literals: found before parsing, which recurses per bracket.
fn too_deep_brackets(source: &str) -> Option<usize> {
    let chars: Vec<char> = source.chars().collect();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_FILTER_DEPTH {
                    return Some(i);
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            quote @ ('"' | '\'') => {
                let triple = chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote);
                let raw = i > 0 && matches!(chars[i - 1], 'r' | 'R');
                i += if triple { 3 } else { 1 };
                while i < chars.len() {
                    if chars[i] == '\\' && !raw {
                        i += 2;
                        continue;
                    }
                    if chars[i] == quote
                        && (!triple
                            || (chars.get(i + 1) == Some(&quote)
                                && chars.get(i + 2) == Some(&quote)))
                    {
                        i += if triple { 2 } else { 0 };
                        break;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The id of the first node deeper than `max` levels, if any.
fn deeper_than(root: &IdedExpr, max: usize) -> Option<u64> {
    fn walk(e: &IdedExpr, depth: usize, max: usize) -> Option<u64> {
        if depth > max {
            return Some(e.id);
        }
        let mut found = None;
        children(e, &mut |child| {
            if found.is_none() {
                found = walk(child, depth + 1, max);
            }
        });
        found
    }
    walk(root, 1, max)
}

/// Calls `each` with every direct child of `e`.
fn children<'a>(e: &'a IdedExpr, each: &mut dyn FnMut(&'a IdedExpr)) {
    match &e.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                each(target);
            }
            call.args.iter().for_each(each);
        }
        Expr::Comprehension(c) => {
            for child in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                each(child);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(each),
        Expr::Map(map) => map
            .entries
            .iter()
            .for_each(|entry| entry_children(entry, each)),
        Expr::Struct(s) => s
            .entries
            .iter()
            .for_each(|entry| entry_children(entry, each)),
        Expr::Select(select) => each(&select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry_children<'a>(
    entry: &'a cel::common::ast::IdedEntryExpr,
    each: &mut dyn FnMut(&'a IdedExpr),
) {
    match &entry.expr {
        EntryExpr::StructField(field) => each(&field.value),
        EntryExpr::MapEntry(map) => {
            each(&map.key);
            each(&map.value);
        }
    }
}

/// Walks `e`, calling `visit` with each node and the names comprehensions bind around it (a
/// comprehension's own variables are in scope in its body, not in its range); `visit` answers
/// whether to go below the node.
fn walk_scoped<'a>(
    e: &'a IdedExpr,
    bound: &mut Vec<&'a str>,
    visit: &mut dyn FnMut(&'a IdedExpr, &[&'a str]) -> bool,
) {
    if !visit(e, bound) {
        return;
    }
    if let Expr::Comprehension(c) = &e.expr {
        walk_scoped(&c.iter_range, bound, visit);
        let before = bound.len();
        bound.push(&c.iter_var);
        if let Some(second) = &c.iter_var2 {
            bound.push(second);
        }
        bound.push(&c.accu_var);
        for child in [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
            walk_scoped(child, bound, visit);
        }
        bound.truncate(before);
        return;
    }
    let mut kids = Vec::new();
    children(e, &mut |child| kids.push(child));
    for child in kids {
        walk_scoped(child, bound, visit);
    }
}

/// Calls `each` with every free name `e` uses (not a comprehension's own variables) and the id
/// of the node that uses it.
fn names(e: &IdedExpr, each: &mut dyn FnMut(&str, u64)) {
    walk_scoped(e, &mut Vec::new(), &mut |node, bound| {
        if let Expr::Ident(name) = &node.expr
            && !bound.contains(&name.as_str())
        {
            each(name, node.id);
        }
        true
    });
}

/// The members of `value` that `e` selects (`value.x`, `has(value.x)`), or `None` where `e` uses
/// `value` otherwise (`size(value)`): then each item's value is made whole.
fn value_members(e: &IdedExpr) -> Option<Vec<String>> {
    let mut members = Some(Vec::new());
    let item = |node: &IdedExpr, bound: &[&str]| matches!(&node.expr, Expr::Ident(name) if name == "value" && !bound.contains(&"value"));
    walk_scoped(e, &mut Vec::new(), &mut |node, bound| {
        let Some(list) = &mut members else {
            return false;
        };
        match &node.expr {
            Expr::Select(select) if item(&select.operand, bound) => {
                if !list.contains(&select.field) {
                    list.push(select.field.clone());
                }
                false
            }
            _ if item(node, bound) => {
                members = None;
                false
            }
            _ => true,
        }
    });
    members
}

/// The names a compiled filter uses, for tests.
#[cfg(test)]
pub(super) fn used(filter: &Filter) -> std::collections::HashSet<&'static str> {
    VARIABLES
        .iter()
        .zip(filter.compiled().uses)
        .filter_map(|(name, used)| used.then_some(*name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(source: &str) -> (usize, String) {
        match Filter::compile(source) {
            Err(Error::InvalidFilter { position, reason }) => (position, reason),
            other => panic!("{source:?} compiled: {other:?}"),
        }
    }

    #[test]
    fn says_where_and_why() {
        // At the character that is wrong.
        assert_eq!(refused(")").0, 0);
        assert_eq!(refused("value.a ) 1").0, 8);
        assert_eq!(refused("value.total > > 100").0, 14);
        let (at, why) = refused("value.a == ");
        assert_eq!(at, 11, "{why}");
        let (at, why) = refused("value.a == 1 &&\n  nope(");
        assert!(at > 15, "{at}: {why}");
        let (at, why) = refused("value.a == 1 && other.b");
        assert_eq!(at, 16);
        assert!(why.contains("unknown name `other`"), "{why}");
        let (at, _) = refused("   ");
        assert_eq!(at, 0);
    }

    #[test]
    fn comprehension_variables_are_names_of_their_own() {
        Filter::compile("value.tags.exists(t, t == 'a')").expect("compiles");
        Filter::compile("value.tags.all(t, t.size() > 1)").expect("compiles");
        let (_, why) = refused("value.tags.exists(t, t == 'a') && t == 'b'");
        assert!(why.contains("`t`"), "{why}");
    }

    #[test]
    fn limits_length_and_depth() {
        let long = format!("value.a == '{}'", "x".repeat(MAX_FILTER_BYTES));
        let (at, why) = refused(&long);
        assert_eq!(at, MAX_FILTER_BYTES);
        assert!(why.contains("4096"), "{why}");
        let nest = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
        Filter::compile(&nest(MAX_FILTER_DEPTH)).expect("at the limit");
        assert_eq!(refused(&nest(MAX_FILTER_DEPTH + 1)).0, MAX_FILTER_DEPTH);
        // Brackets inside strings are text.
        Filter::compile(&format!("value.a == '{}'", "(".repeat(100))).expect("a string");
        Filter::compile(&format!(r"value.a == r'\{}'", "[".repeat(100))).expect("a raw string");
        let triple = format!("value.a == '''{}'''", "{\"".repeat(100));
        Filter::compile(&triple).expect("a triple-quoted string");
        // Chains deepen the tree without brackets.
        let (_, why) = refused(&vec!["value.a"; 100].join(" + "));
        assert!(why.contains("nests deeper"), "{why}");
        let (_, why) = refused(&format!("value{}", ".a".repeat(1000)));
        assert!(why.contains("nests deeper"), "{why}");
    }

    #[test]
    fn the_worst_inputs_within_the_length_limit_never_overflow_a_small_stack() {
        // Smaller than a tokio worker's: nothing a client sends may overflow it.
        let worst: Vec<String> = vec![
            "(".repeat(4000),
            "[".repeat(4000),
            "size(".repeat(800),
            "{1:".repeat(1300),
            vec!["1"; 2000].join("+"),
            format!("a{}", "[0]".repeat(1300)),
            format!("value{}", ".f()".repeat(1000)),
            "1 ? ".repeat(1000),
            "-".repeat(4000) + "1",
            "!".repeat(4000) + "true",
            "'".repeat(4000),
            "\"".repeat(4000),
            format!("{}value", "value.exists(x, ".repeat(200)),
        ];
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                for source in worst {
                    let _ = Filter::compile(&source);
                }
            })
            .expect("a thread")
            .join()
            .expect("no overflow");
    }
}
