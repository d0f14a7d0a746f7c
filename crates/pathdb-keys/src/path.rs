//! The key path model: a non-empty list of `(namespace, id?)` elements.

use crate::{BuildError, Id, Namespace, Rule};

/// One element of a key path: a namespace and, except possibly for the last element, an id.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Element {
    namespace: Namespace,
    id: Option<Id>,
}

impl Element {
    /// Makes an element; the id's content is validated here.
    ///
    /// # Errors
    /// The rule the id breaks (empty string or bytes, a control character).
    pub fn new(namespace: Namespace, id: Option<Id>) -> Result<Element, Rule> {
        if let Some(id) = &id {
            id.validate()?;
        }
        Ok(Element { namespace, id })
    }

    /// For ids a decoder or parser has already validated.
    pub(crate) fn new_unchecked(namespace: Namespace, id: Option<Id>) -> Element {
        debug_assert!(id.as_ref().is_none_or(|id| id.validate().is_ok()));
        Element { namespace, id }
    }

    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The id, if the element has one.
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// Both parts, by value.
    pub fn into_parts(self) -> (Namespace, Option<Id>) {
        (self.namespace, self.id)
    }
}

/// A valid key path such as `/user-7/post-1234`.
///
/// Invariants (checked by every constructor): at least one element; the first element (the group)
/// has an id; only the last element may omit its id; namespaces and ids follow their rules.
///
/// `Ord` is the byte order of the binary encoding, so a `BTreeMap<KeyPath, _>` iterates exactly as
/// a store scans: a parent right before its subtree, integers numerically, descending ids reversed.
/// docs/key-format.md states the order across types.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct KeyPath {
    elements: Vec<Element>,
}

impl KeyPath {
    /// Starts a builder: `KeyPath::builder().push("user", 7).push("post", 1234).build()?`.
    pub fn builder() -> KeyPathBuilder {
        KeyPathBuilder::default()
    }

    /// Makes a path from elements, checking the path-level rules.
    ///
    /// # Errors
    /// No elements, a group without id, or an element without id that is not the last.
    pub fn from_elements(elements: Vec<Element>) -> Result<KeyPath, BuildError> {
        check_elements(&elements, true)?;
        Ok(KeyPath { elements })
    }

    /// Skips validation: for decoders and parsers that already enforced every rule.
    pub(crate) fn from_checked(elements: Vec<Element>) -> KeyPath {
        debug_assert!(check_elements(&elements, true).is_ok());
        KeyPath { elements }
    }

    /// The elements, group first.
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Always false: a key path has at least one element. Present for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The group (partition) element: the first one.
    pub fn group(&self) -> &Element {
        &self.elements[0]
    }

    /// The last element.
    pub fn last(&self) -> &Element {
        &self.elements[self.elements.len() - 1]
    }

    /// The parent path, or `None` for a one-element path.
    pub fn parent(&self) -> Option<KeyPath> {
        (self.elements.len() > 1).then(|| KeyPath {
            elements: self.elements[..self.elements.len() - 1].to_vec(),
        })
    }

    /// A new path with one more element.
    ///
    /// # Errors
    /// This path's last element has no id (it cannot have children), or the new element is invalid.
    pub fn child(&self, namespace: &str, id: impl Into<Id>) -> Result<KeyPath, BuildError> {
        self.extend(namespace, Some(id.into()))
    }

    /// A new path with one more element that has no id (`/user-7/settings`).
    ///
    /// # Errors
    /// As [`KeyPath::child`].
    pub fn child_without_id(&self, namespace: &str) -> Result<KeyPath, BuildError> {
        self.extend(namespace, None)
    }

    fn extend(&self, namespace: &str, id: Option<Id>) -> Result<KeyPath, BuildError> {
        let index = self.elements.len();
        if self.last().id.is_none() {
            return Err(BuildError {
                element: index - 1,
                rule: Rule::MissingId,
            });
        }
        let element = make_element(namespace, id).map_err(|rule| BuildError {
            element: index,
            rule,
        })?;
        let mut elements = self.elements.clone();
        elements.push(element);
        Ok(KeyPath { elements })
    }

    /// Whether `self` is `other` or one of its ancestors, element by element (typed, not bytes).
    pub fn is_prefix_of(&self, other: &KeyPath) -> bool {
        other.elements.len() >= self.elements.len()
            && self.elements[..] == other.elements[..self.elements.len()]
    }

    /// Whether `other` lies in this path's subtree: `other` is this path or below it, and a last
    /// element without id stands for its whole namespace (`/user-7/post` covers `/user-7/post-1`
    /// and its subtree). This is the typed meaning of [`KeyPath::subtree_range`].
    pub fn covers(&self, other: &KeyPath) -> bool {
        let n = self.elements.len();
        if other.elements.len() < n || self.elements[..n - 1] != other.elements[..n - 1] {
            return false;
        }
        let (mine, theirs) = (&self.elements[n - 1], &other.elements[n - 1]);
        match &mine.id {
            Some(_) => mine == theirs,
            None => mine.namespace == theirs.namespace,
        }
    }
}

/// Checks the path-level rules over already-valid elements. `require_group_id` is false for the
/// element list of a sort key (keypath-format.md §4), whose first element is not a group.
pub(crate) fn check_elements(
    elements: &[Element],
    require_group_id: bool,
) -> Result<(), BuildError> {
    if elements.is_empty() {
        return Err(BuildError {
            element: 0,
            rule: Rule::EmptyPath,
        });
    }
    if require_group_id && elements[0].id.is_none() {
        return Err(BuildError {
            element: 0,
            rule: Rule::GroupWithoutId,
        });
    }
    if let Some(i) = elements[..elements.len() - 1]
        .iter()
        .position(|e| e.id.is_none())
    {
        return Err(BuildError {
            element: i,
            rule: Rule::MissingId,
        });
    }
    Ok(())
}

fn make_element(namespace: &str, id: Option<Id>) -> Result<Element, Rule> {
    Element::new(Namespace::new(namespace)?, id)
}

/// Builds a [`KeyPath`] without string parsing. Errors are kept until [`KeyPathBuilder::build`].
///
/// ```
/// use pathdb_keys::{Desc, KeyPath};
/// let path = KeyPath::builder()
///     .push("season", "2026-spring")
///     .push("score", Desc(1500))
///     .build()?;
/// assert_eq!(path.to_string(), "/season-2026-spring/score-!1500");
/// # Ok::<(), pathdb_keys::BuildError>(())
/// ```
#[derive(Default, Debug, Clone)]
pub struct KeyPathBuilder {
    elements: Vec<Element>,
    error: Option<BuildError>,
}

impl KeyPathBuilder {
    /// Appends an element with an id.
    pub fn push(self, namespace: &str, id: impl Into<Id>) -> Self {
        self.push_element(namespace, Some(id.into()))
    }

    /// Appends an element without id; only valid as the last element.
    pub fn push_namespace(self, namespace: &str) -> Self {
        self.push_element(namespace, None)
    }

    fn push_element(mut self, namespace: &str, id: Option<Id>) -> Self {
        if self.error.is_none() {
            match make_element(namespace, id) {
                Ok(e) => self.elements.push(e),
                Err(rule) => {
                    self.error = Some(BuildError {
                        element: self.elements.len(),
                        rule,
                    });
                }
            }
        }
        self
    }

    /// Finishes the path.
    ///
    /// # Errors
    /// The first rule any pushed element broke, or a path-level rule.
    pub fn build(self) -> Result<KeyPath, BuildError> {
        match self.error {
            Some(e) => Err(e),
            None => KeyPath::from_elements(self.elements),
        }
    }
}
