//! Listings of one group's items (read/list.rs, read/listed.rs) and of groups (read/groups.rs).

use crate::backend::Backend;
use crate::model::error::Error;
use crate::read::aliases::prefix_served;
use crate::read::groups::{GroupPage, groups};
use crate::read::list::{CountPage, ListPage, ListRequest, count, list};
use crate::read::listed::{ListedPage, list_encoded};
use crate::store::Store;

impl<B: Backend> Store<B> {
    /// One page of a listing inside the group of `request.prefix`.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside 1..=[`MAX_LIST_LIMIT`](crate::MAX_LIST_LIMIT)
    /// or a bound in another group; [`Error::InvalidPageToken`] for a token from another
    /// listing; storage failures.
    pub fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        prefix_served(&self.db.namespaces, &self.db.backend, &request.prefix)?;
        let definitions = self.definitions()?;
        list(
            &self.db.backend,
            &self.db.tokens,
            self.db.now(),
            request,
            &definitions,
        )
    }

    /// How many entries of `request`'s range its filter matches (every entry, without one),
    /// reading at most its `max_scan` items: a [`CountPage`] with a next page token when the
    /// range goes on (count on from it and add). Its `limit`, `fields` and `reverse` do not
    /// change the count.
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn count(&self, request: &ListRequest) -> Result<CountPage, Error> {
        prefix_served(&self.db.namespaces, &self.db.backend, &request.prefix)?;
        let definitions = self.definitions()?;
        count(
            &self.db.backend,
            &self.db.tokens,
            self.db.now(),
            request,
            &definitions,
        )
    }

    /// [`Store::list`] with each entry's path kept in its binary form ([`EncodedPath`](crate::EncodedPath)) and
    /// decoded only when asked for: the same entries, order and tokens, without building an owned
    /// `KeyPath` per entry. For callers that read the values, write paths as text
    /// (`EncodedPath` is `Display` and serializes as a `KeyPath` does) or decode only some paths;
    /// [`ListedPage::into_page`](crate::ListedPage::into_page) gives the `ListPage`.
    ///
    /// ```
    /// use pathdb_store::backend::InMemoryBackend;
    /// use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions};
    ///
    /// let store = Store::new(InMemoryBackend::new(), StoreOptions::default())?;
    /// let path = "/user-7/post-1".parse()?;
    /// store.put(&path, Json::parse(r#"{"title": "hi"}"#)?, PutOptions::default())?;
    /// let page = store.list_encoded(&ListRequest::new("/user-7".parse()?))?;
    /// let item = page.items[0].item().ok_or("not an item")?;
    /// assert_eq!(item.path.to_string(), "/user-7/post-1"); // text, from the key's bytes
    /// assert_eq!(item.path.decode(), path); // an owned `KeyPath`, when asked for
    /// assert_eq!(item.value.as_str(), r#"{"title":"hi"}"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn list_encoded(&self, request: &ListRequest) -> Result<ListedPage, Error> {
        prefix_served(&self.db.namespaces, &self.db.backend, &request.prefix)?;
        let definitions = self.definitions()?;
        list_encoded(
            &self.db.backend,
            &self.db.tokens,
            self.db.now(),
            request,
            &definitions,
        )
    }

    /// Up to `limit` groups in key order, after the page that returned `page_token`.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside
    /// 1..=[`MAX_GROUPS_LIMIT`](crate::MAX_GROUPS_LIMIT); [`Error::InvalidPageToken`] for a
    /// token that did not come from this call; storage failures.
    pub fn groups(&self, limit: usize, page_token: Option<&str>) -> Result<GroupPage, Error> {
        self.groups_with_prefix("", limit, page_token)
    }

    /// Up to `limit` groups whose namespace starts with `prefix` (`"user"` lists `/user-7`,
    /// `/users-2` and `/user_old-1`; `""` lists every group), in key order, after the page that
    /// returned `page_token`. The prefix is the start of a namespace, compared byte for byte
    /// (so case-sensitive), never an id.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside
    /// 1..=[`MAX_GROUPS_LIMIT`](crate::MAX_GROUPS_LIMIT) or a prefix with a character no
    /// namespace has (or longer than a namespace); [`Error::InvalidPageToken`] for a token that
    /// did not come from this call with this prefix; storage failures.
    pub fn groups_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
        page_token: Option<&str>,
    ) -> Result<GroupPage, Error> {
        let db = &self.db;
        groups(&db.backend, &db.tokens, prefix, limit, page_token, db.now())
    }
}
