//! The HTTP client behind `--server URL`: the same [`Db`] calls, sent to a `pathdb serve`.

use crate::db::{Changes, Db, FeedChange, ImportMode, Projection};
use crate::exit::Failure;
use anyhow::{Context, Result, bail};
use pathdb_keys::KeyPath;
use pathdb_store::{
    AliasBuild, AliasConflict, AliasDefinition, AliasState, Change, Condition, CountPage,
    DEFAULT_MAX_SCAN, Definition, Expiry, ExportEnd, ExportLine, ExportStatus, Filter, GroupPage,
    IdKind, ImportReport, Item, Json, ListEntry, ListRequest, ListedPage, NamespaceDefinition,
    NewToken, Patch, PutOptions, Role, SchemaCheck, StoredRole, SubtreeJob, SubtreeOp, Timestamp,
    TokenInfo, ViolatingItem, Violation, ViolationPage,
};
use serde::Deserialize;
use std::io::BufRead;
use std::time::Duration;

/// A PathDB server.
pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
    /// The `Schema-Version` header every request sends (docs/migrations.md); empty: none.
    speaks: String,
}

#[derive(Deserialize)]
struct ItemIn {
    path: String,
    version: u64,
    created_at: i64,
    modified_at: i64,
    expires_at: Option<i64>,
    value: Box<serde_json::value::RawValue>,
    #[serde(default)]
    alias: Option<String>,
    #[serde(default)]
    schema_version: u64,
}

impl ItemIn {
    fn into_item(self) -> Result<Item> {
        Ok(Item {
            path: self
                .path
                .parse()
                .with_context(|| format!("server sent an invalid path {:?}", self.path))?,
            version: self.version,
            created_at: Timestamp(self.created_at),
            modified_at: Timestamp(self.modified_at),
            expires_at: self.expires_at.map(Timestamp),
            value: Json::parse(self.value.get())?,
            schema_version: self.schema_version,
            alias: self
                .alias
                .map(|a| a.parse())
                .transpose()
                .context("server sent an invalid alias")?,
        })
    }
}

#[derive(Deserialize)]
struct ChangesIn {
    changes: Vec<ChangeIn>,
    next_token: String,
}

/// A plain struct, not a tagged enum: serde buffers a tagged enum's content, and a buffered
/// value cannot become the item's `RawValue`.
#[derive(Deserialize)]
struct ChangeIn {
    op: String,
    item: Option<ItemIn>,
    path: Option<String>,
    version: Option<u64>,
    #[serde(default)]
    alias: Option<String>,
    /// A filtered feed's leave.
    #[serde(default)]
    left: bool,
}

impl ChangeIn {
    fn into_change(self) -> Result<FeedChange> {
        let left = self.left;
        let change = match (self.op.as_str(), self.item, self.path, self.version) {
            ("put", Some(item), _, _) => Change::Put(item.into_item()?),
            ("delete", _, Some(path), Some(version)) => Change::Delete {
                path: path.parse().context("server sent an invalid path")?,
                version,
                alias: self
                    .alias
                    .map(|a| a.parse())
                    .transpose()
                    .context("server sent an invalid alias")?,
            },
            (op, ..) => bail!("server sent an invalid change (op {op:?})"),
        };
        Ok(FeedChange { change, left })
    }
}

#[derive(Deserialize)]
struct CountIn {
    count: usize,
    scanned: usize,
    #[serde(default)]
    next_page_token: Option<String>,
}

/// What tells a listing's node (`{"path", "node": true}`) from an item. (An untagged enum
/// cannot hold an item: its value is a `RawValue`, which serde cannot buffer.)
#[derive(Deserialize)]
struct NodeProbe {
    path: String,
    #[serde(default)]
    node: bool,
}

fn entry_in(raw: &serde_json::value::RawValue) -> Result<ListEntry> {
    let probe: NodeProbe =
        serde_json::from_str(raw.get()).context("server sent an invalid entry")?;
    if probe.node {
        let path = probe
            .path
            .parse()
            .with_context(|| format!("server sent an invalid path {:?}", probe.path))?;
        return Ok(ListEntry::Node(path));
    }
    let item: ItemIn = serde_json::from_str(raw.get()).context("server sent an invalid item")?;
    item.into_item().map(ListEntry::Item)
}

#[derive(Deserialize)]
struct ListIn {
    items: Vec<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    next_page_token: Option<String>,
    #[serde(default)]
    changes_token: Option<String>,
    #[serde(default)]
    scanned: usize,
}

#[derive(Deserialize)]
struct ItemsIn {
    items: Vec<ItemIn>,
}

#[derive(Deserialize)]
struct GroupsIn {
    groups: Vec<String>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct ErrorIn {
    error: ErrorDetailIn,
}

#[derive(Deserialize)]
struct ErrorDetailIn {
    code: String,
    message: String,
    #[serde(default)]
    violations: Vec<Violation>,
    /// With `invalid_filter`: where in the filter.
    #[serde(default)]
    position: Option<usize>,
}

#[derive(Deserialize)]
struct DefinitionIn {
    namespace: String,
    version: u64,
    created_at: i64,
    modified_at: i64,
    schema: Option<serde_json::Value>,
    history: Option<u32>,
    description: Option<String>,
    #[serde(default)]
    aliases: Vec<AliasIn>,
    #[serde(default)]
    migrate: Vec<serde_json::Value>,
    #[serde(default)]
    formats: Option<String>,
    #[serde(default)]
    changes: Option<bool>,
}

/// A template and its build, as the server answers it.
#[derive(Deserialize)]
struct AliasIn {
    path: String,
    state: AliasState,
    #[serde(default)]
    checked: u64,
    #[serde(default)]
    written: u64,
    #[serde(default)]
    conflicts: Vec<AliasConflictIn>,
}

#[derive(Deserialize)]
struct AliasConflictIn {
    alias: String,
    items: Vec<String>,
}

impl AliasIn {
    fn into_build(self) -> Result<AliasBuild> {
        let conflicts = self
            .conflicts
            .into_iter()
            .map(|c| {
                Ok(AliasConflict {
                    alias: c.alias.parse().context("server sent an invalid alias")?,
                    items: c
                        .items
                        .iter()
                        .map(|i| i.parse())
                        .collect::<Result<_, _>>()
                        .context("server sent an invalid path")?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(AliasBuild {
            template: self.path,
            state: self.state,
            checked: self.checked,
            written: self.written,
            conflicts,
        })
    }
}

impl From<DefinitionIn> for NamespaceDefinition {
    fn from(d: DefinitionIn) -> NamespaceDefinition {
        // The templates of the definition (not those being removed).
        let aliases = d
            .aliases
            .into_iter()
            .filter(|a| a.state != AliasState::Removing)
            .map(|a| AliasDefinition { path: a.path })
            .collect();
        NamespaceDefinition {
            namespace: d.namespace,
            version: d.version,
            created_at: Timestamp(d.created_at),
            modified_at: Timestamp(d.modified_at),
            definition: Definition {
                schema: d.schema,
                history: d.history,
                description: d.description,
                aliases,
                migrate: d
                    .migrate
                    .into_iter()
                    .filter_map(|step| serde_json::from_value(step).ok())
                    .collect(),
                formats: d
                    .formats
                    .and_then(|f| serde_json::from_value(serde_json::Value::String(f)).ok()),
                changes: d.changes,
            },
        }
    }
}

#[derive(Deserialize)]
struct DefinitionsIn {
    namespaces: Vec<DefinitionIn>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct ViolatingIn {
    path: String,
    version: u64,
    violations: Vec<Violation>,
}

impl ViolatingIn {
    fn into_item(self) -> Result<ViolatingItem> {
        Ok(ViolatingItem {
            path: self
                .path
                .parse()
                .with_context(|| format!("server sent an invalid path {:?}", self.path))?,
            version: self.version,
            violations: self.violations,
        })
    }
}

#[derive(Deserialize)]
struct DryRunIn {
    checked: u64,
    violating: u64,
    first: Vec<ViolatingIn>,
}

#[derive(Deserialize)]
struct ViolationsIn {
    items: Vec<ViolatingIn>,
    checked: u64,
    next_page_token: Option<String>,
}

/// Whether a content type is JSON (or JSON lines), as every PathDB answer but the console is.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case("application/x-ndjson")
        || essence.eq_ignore_ascii_case("application/jsonl")
}

/// Characters a key path may keep in a URL path; everything else is percent-encoded.
fn url_path(path: &KeyPath) -> String {
    let mut out = String::new();
    for b in path.to_string().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~!".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// `GET /v1/backup` into `out` (admin). The stream is checked by the caller: one cut short
    /// fails its checksum.
    pub fn backup(&self, out: &mut dyn std::io::Write) -> Result<()> {
        let request = self.auth(self.agent.get(format!("{}/v1/backup", self.base)));
        let mut response = request.call().context("backup: cannot reach the server")?;
        let binary = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/octet-stream"));
        if response.status().as_u16() != 200 || !binary {
            let (_, body) = self.read(Ok(response), "backup")?;
            bail!("backup: {body}");
        }
        std::io::copy(&mut response.body_mut().as_reader(), out)
            .context("backup: the stream broke")?;
        Ok(())
    }
    /// A client for the server at `base` (e.g. `http://127.0.0.1:7070`).
    pub fn new(base: &str, token: Option<String>) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build();
        Client {
            base: base.trim_end_matches('/').to_owned(),
            token,
            agent: config.into(),
            speaks: String::new(),
        }
    }

    /// The same client, speaking `versions` (the `Schema-Version` header on every request).
    pub fn speaking(mut self, versions: &pathdb_store::SchemaVersions) -> Client {
        self.speaks = versions.to_string();
        self
    }

    /// The URL of a namespace's definition (a namespace needs no escaping), and `rest` after it.
    fn role_url(&self, name: &str) -> String {
        format!("{}/v1/roles/{name}", self.base)
    }

    fn namespace_url(&self, namespace: &str, rest: &str) -> String {
        format!("{}/v1/namespaces/{namespace}{rest}", self.base)
    }

    fn url(&self, route: &str, path: &KeyPath) -> String {
        format!("{}{route}{}", self.base, url_path(path))
    }

    fn auth<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let request = match &self.token {
            Some(t) => request.header("Authorization", &format!("Bearer {t}")),
            None => request,
        };
        // Every request passes here: the versions spoken go with each.
        if self.speaks.is_empty() {
            request
        } else {
            request.header("Schema-Version", &self.speaks)
        }
    }

    /// Turns a response into its status and body text, or the server's error into ours. A
    /// 404 with PathDB's error body comes back as an answer (not found is the caller's to
    /// read); an answer that is not PathDB's (an error without its JSON error body, a success
    /// that is not JSON) is [`Failure::NotPathdb`].
    fn read(
        &self,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        what: &str,
    ) -> Result<(u16, String)> {
        let mut response = response.with_context(|| format!("{what}: cannot reach the server"))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = response
            .body_mut()
            .read_to_string()
            .with_context(|| format!("{what}: reading the response"))?;
        if status >= 400 {
            let Ok(e) = serde_json::from_str::<ErrorIn>(&body) else {
                return Err(self.not_pathdb(status, &content_type, &body));
            };
            if status == 404 {
                return Ok((status, body));
            }
            if let ("invalid_filter", Some(position)) = (e.error.code.as_str(), e.error.position) {
                // The store's own error, so that the command shows it as a local one
                // (`cmd::filter`): the same words, the filter with a caret under the position.
                let prefix = format!("invalid filter at character {position}: ");
                let reason = match e.error.message.strip_prefix(&prefix) {
                    Some(reason) => reason.to_owned(),
                    None => e.error.message,
                };
                return Err(pathdb_store::Error::InvalidFilter { position, reason }.into());
            }
            // Typed, so that the exit status is the one a local store error of the same kind
            // gives (`exit.rs`).
            return Err(Failure::Server {
                status,
                code: e.error.code,
                message: e.error.message,
                violations: e.error.violations,
            }
            .into());
        }
        if !(200..300).contains(&status) || !is_json(&content_type) {
            return Err(self.not_pathdb(status, &content_type, &body));
        }
        Ok((status, body))
    }

    /// A success body as `T`; a body of another shape means another kind of server.
    fn parse<T: serde::de::DeserializeOwned>(&self, status: u16, body: &str) -> Result<T> {
        serde_json::from_str(body).map_err(|_| self.not_pathdb(status, "application/json", body))
    }

    /// Names the server and quotes the start of what it answered.
    fn not_pathdb(&self, status: u16, content_type: &str, body: &str) -> anyhow::Error {
        const SHOWN: usize = 60;
        let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut shown: String = flat.chars().take(SHOWN).collect();
        if flat.chars().count() > SHOWN {
            shown.push_str("...");
        }
        let content_type = if content_type.is_empty() {
            "no content type".to_owned()
        } else {
            content_type.to_owned()
        };
        Failure::NotPathdb {
            server: self.base.clone(),
            answered: format!("HTTP {status}, {content_type}: {shown:?}"),
        }
        .into()
    }

    /// Sends an item write (put or create) with its history and expiry options; the item written.
    fn send_item(
        &self,
        mut request: ureq::RequestBuilder<ureq::typestate::WithBody>,
        value: Json,
        options: &PutOptions,
        what: &str,
    ) -> Result<Item> {
        if options.history {
            request = request.query("history", "true");
        }
        match options.expires {
            Some(Expiry::After(d)) => {
                request = request.query("ttl_seconds", d.as_secs().to_string())
            }
            Some(Expiry::At(_)) => {
                bail!("an absolute expiry is not supported over HTTP; use a TTL")
            }
            None => {}
        }
        match self.read(request.send(value.as_str()), what)? {
            // A patch of a missing item; anything else answering 404 is not PathDB's item route.
            (404, body) => match serde_json::from_str::<ErrorIn>(&body) {
                Ok(e) if e.error.code == "not_found" => {
                    Err(Failure::NotFound(e.error.message).into())
                }
                _ => bail!("{what}: HTTP 404: {body}"),
            },
            (status, body) => self.item(status, &body),
        }
    }

    /// Sends a write's condition as `If-Match` / `If-None-Match`.
    fn precondition(
        request: ureq::RequestBuilder<ureq::typestate::WithBody>,
        condition: Option<Condition>,
        what: &str,
    ) -> Result<ureq::RequestBuilder<ureq::typestate::WithBody>> {
        Ok(match condition {
            Some(Condition::MustNotExist) => request.header("If-None-Match", "*"),
            Some(Condition::IfVersion(v)) => request.header("If-Match", &v.to_string()),
            Some(Condition::MustExist) => {
                bail!("a must-exist {what} is not supported over HTTP; use a transaction")
            }
            None => request,
        })
    }

    fn item(&self, status: u16, body: &str) -> Result<Item> {
        self.parse::<ItemIn>(status, body)?.into_item()
    }

    /// `GET /v1/list/{prefix}` with what a listing and a count share: its range, page token
    /// and filter.
    fn list_request(&self, r: &ListRequest) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        let mut request = self.auth(self.agent.get(self.url("/v1/list", &r.prefix)));
        if r.children_only {
            request = request.query("children", "true");
        }
        for (name, bound) in [
            ("gt", &r.gt),
            ("gte", &r.gte),
            ("lt", &r.lt),
            ("lte", &r.lte),
        ] {
            if let Some(b) = bound {
                request = request.query(name, b.to_string());
            }
        }
        if let Some(t) = &r.page_token {
            request = request.query("page_token", t);
        }
        if let Some(f) = &r.filter {
            request = request.query("filter", f.source());
        }
        request
    }
}

impl Db for Client {
    fn get(
        &self,
        path: &KeyPath,
        version: Option<u64>,
        fields: Option<&Projection>,
    ) -> Result<Option<Item>> {
        let mut request = self.auth(self.agent.get(self.url("/v1/items", path)));
        if let Some(v) = version {
            request = request.query("version", v.to_string());
        }
        if let Some(p) = fields {
            request = request.query("fields", &p.text);
        }
        match self.read(request.call(), "get")? {
            (404, _) => Ok(None),
            (status, body) => self.item(status, &body).map(Some),
        }
    }

    fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item> {
        let request = self
            .auth(self.agent.put(self.url("/v1/items", path)))
            .header("Content-Type", "application/json");
        let request = Self::precondition(request, options.condition, "put")?;
        self.send_item(request, value, &options, "put")
    }

    fn patch(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<Item> {
        let media_type = match patch {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
        };
        let mut request = self
            .auth(self.agent.patch(self.url("/v1/items", path)))
            .header("Content-Type", media_type);
        if create {
            request = request.query("create", "true");
        }
        let request = Self::precondition(request, options.condition, "patch")?;
        let document = Json::from_value(&patch.document());
        self.send_item(request, document, &options, "patch")
    }

    fn create(
        &self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
        options: PutOptions,
    ) -> Result<Item> {
        let route = match parent {
            Some(p) => format!("{}/v1/items{}/{namespace}", self.base, url_path(p)),
            None => format!("{}/v1/items/{namespace}", self.base),
        };
        let request = self
            .auth(self.agent.post(route))
            .header("Content-Type", "application/json")
            .query("id", id.as_str());
        if options.condition.is_some() {
            bail!("a create takes no condition");
        }
        self.send_item(request, value, &options, "create")
    }

    fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&str>,
        wait: std::time::Duration,
        filter: Option<&Filter>,
    ) -> Result<Changes> {
        let mut request = self.auth(self.agent.get(self.url("/v1/changes", prefix)));
        if let Some(t) = since {
            request = request
                .query("since", t)
                .query("wait", wait.as_secs().min(60).to_string());
        }
        if let Some(f) = filter {
            request = request.query("filter", f.source());
        }
        let (status, body) = self.read(request.call(), "changes")?;
        let page: ChangesIn = self.parse(status, &body)?;
        Ok(Changes {
            changes: page
                .changes
                .into_iter()
                .map(ChangeIn::into_change)
                .collect::<Result<_>>()?,
            next_token: page.next_token,
        })
    }

    fn delete(&self, path: &KeyPath, condition: Option<Condition>) -> Result<Option<Item>> {
        let mut request = self.auth(self.agent.delete(self.url("/v1/items", path)));
        if let Some(Condition::IfVersion(v)) = condition {
            request = request.header("If-Match", &v.to_string());
        }
        match self.read(request.call(), "delete")? {
            (404, _) => Ok(None),
            (status, body) => self.item(status, &body).map(Some),
        }
    }

    fn subtree(&self, job: &SubtreeJob, _progress: &mut dyn FnMut(u64)) -> Result<u64> {
        let what = job.op.as_str();
        let response = match (job.op, &job.to) {
            (SubtreeOp::Delete, _) => self
                .auth(self.agent.delete(self.url("/v1/items", &job.from)))
                .query("recursive", "true")
                .call(),
            (op, Some(to)) => {
                let route = match op {
                    SubtreeOp::Copy => "/v1/copy",
                    _ => "/v1/move",
                };
                let body = serde_json::json!({"from": job.from.to_string(), "to": to.to_string()});
                self.auth(self.agent.post(format!("{}{route}", self.base)))
                    .header("Content-Type", "application/json")
                    .send(body.to_string())
            }
            (_, None) => bail!("a {what} needs a destination"),
        };
        let (status, body) = self.read(response, what)?;
        let answer: serde_json::Value = self.parse(status, &body)?;
        if status == 404 {
            let message = answer["error"]["message"].as_str().unwrap_or(&body);
            return Err(Failure::NotFound(message.to_owned()).into());
        }
        answer[job.op.past_tense()]
            .as_u64()
            .with_context(|| format!("{what}: server sent {body}"))
    }

    fn groups(&self, prefix: &str, limit: usize, page_token: Option<&str>) -> Result<GroupPage> {
        let mut request = self.auth(self.agent.get(format!("{}/v1/groups", self.base)));
        request = request.query("limit", limit.to_string());
        if !prefix.is_empty() {
            // Only when asked: a server older than `prefix` refuses it as unknown.
            request = request.query("prefix", prefix);
        }
        if let Some(t) = page_token {
            request = request.query("page_token", t);
        }
        let (status, body) = self.read(request.call(), "list groups")?;
        let page: GroupsIn = self.parse(status, &body)?;
        Ok(GroupPage {
            groups: page
                .groups
                .iter()
                .map(|g| g.parse().context("server sent an invalid group"))
                .collect::<Result<_>>()?,
            next_page_token: page.next_page_token,
        })
    }

    fn list(&self, r: &ListRequest, fields: Option<&Projection>) -> Result<ListedPage> {
        let mut request = self.list_request(r);
        request = request.query("limit", r.limit.to_string());
        if r.reverse {
            request = request.query("reverse", "true");
        }
        // Only when asked: a server older than these refuses them as unknown.
        if r.max_scan != DEFAULT_MAX_SCAN {
            request = request.query("max_scan", r.max_scan.to_string());
        }
        if let Some(p) = fields {
            request = request.query("fields", &p.text);
        }
        let (status, body) = self.read(request.call(), "list")?;
        let page: ListIn = self.parse(status, &body)?;
        Ok(ListedPage {
            // Parsed from text, then encoded: the local listing's form, which the printer takes.
            items: page
                .items
                .into_iter()
                .map(|raw| entry_in(&raw).map(Into::into))
                .collect::<Result<_>>()?,
            next_page_token: page.next_page_token,
            changes_token: page
                .changes_token
                .map(|t| t.parse())
                .transpose()
                .context("server sent an invalid changes_token")?,
            scanned: page.scanned,
        })
    }

    fn count(&self, r: &ListRequest) -> Result<CountPage> {
        let request = self
            .list_request(r)
            .query("count", "true")
            .query("max_scan", r.max_scan.to_string());
        let (status, body) = self.read(request.call(), "count")?;
        let page: CountIn = self.parse(status, &body)?;
        Ok(CountPage {
            count: page.count,
            scanned: page.scanned,
            next_page_token: page.next_page_token,
        })
    }

    fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>> {
        let request = self
            .auth(self.agent.get(self.url("/v1/history", path)))
            .query("limit", limit.to_string());
        let (status, body) = self.read(request.call(), "history")?;
        let page: ItemsIn = self.parse(status, &body)?;
        page.items.into_iter().map(ItemIn::into_item).collect()
    }

    fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd> {
        let request = self.auth(self.agent.get(format!("{}/v1/export", self.base)));
        let mut response = request.call().context("export: cannot reach the server")?;
        let json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json);
        // Anything but a JSON lines stream: `read` names the error (or the other server).
        if response.status().as_u16() != 200 || !json {
            let (_, body) = self.read(Ok(response), "export")?;
            bail!("export: {body}");
        }
        // Copy line by line, keeping the last: the stream is whole only if it says so.
        let mut reader = std::io::BufReader::new(response.body_mut().as_reader());
        let (mut line, mut last, mut records) = (String::new(), String::new(), 0u64);
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .with_context(|| format!("export: the stream broke after {records} records"))?;
            if n == 0 {
                break;
            }
            out.write_all(line.as_bytes())?;
            if !last.is_empty() {
                records += 1;
                if records % 1000 == 0 {
                    progress(records);
                }
            }
            std::mem::swap(&mut line, &mut last);
        }
        match ExportLine::parse(last.trim_end()) {
            Ok(ExportLine::End(end)) if end.export == ExportStatus::Complete => {
                progress(end.records);
                Ok(end)
            }
            Ok(ExportLine::End(end)) => Err(Failure::IncompleteExport(format!(
                "the server stopped after {} records: {}",
                end.records,
                end.error.as_deref().unwrap_or("it gave no reason")
            ))
            .into()),
            _ => Err(Failure::IncompleteExport(format!(
                "the stream ended after {records} records without its last line"
            ))
            .into()),
        }
    }

    fn import(
        &self,
        input: &str,
        mode: ImportMode,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ImportReport> {
        let request = self
            .auth(self.agent.post(format!("{}/v1/import", self.base)))
            .query("on_existing", mode.on_existing.as_str())
            .query("partial", if mode.partial { "true" } else { "false" })
            .header("Content-Type", "application/x-ndjson");
        let total = input.len() as u64;
        let mut reader = Progress {
            inner: input.as_bytes(),
            done: 0,
            total,
            progress,
        };
        let sent = request.send(ureq::SendBody::from_reader(&mut reader));
        let (status, body) = self.read(sent, "import")?;
        #[derive(Deserialize)]
        struct ReportIn {
            imported: u64,
            unchanged: u64,
            skipped: u64,
            last_path: Option<String>,
        }
        let r: ReportIn = self.parse(status, &body)?;
        Ok(ImportReport {
            imported: r.imported,
            unchanged: r.unchanged,
            skipped: r.skipped,
            last_path: r.last_path.map(|p| p.parse()).transpose()?,
        })
    }

    fn namespaces(&self) -> Result<Vec<NamespaceDefinition>> {
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut request = self
                .auth(self.agent.get(format!("{}/v1/namespaces", self.base)))
                .query("limit", "1000");
            if let Some(t) = &token {
                request = request.query("page_token", t);
            }
            let (status, body) = self.read(request.call(), "list namespaces")?;
            let page: DefinitionsIn = self.parse(status, &body)?;
            all.extend(page.namespaces.into_iter().map(NamespaceDefinition::from));
            match page.next_page_token {
                Some(next) => token = Some(next),
                None => return Ok(all),
            }
        }
    }

    fn namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>> {
        let request = self.auth(self.agent.get(self.namespace_url(namespace, "")));
        match self.read(request.call(), "get namespace")? {
            (404, _) => Ok(None),
            (status, body) => Ok(Some(self.parse::<DefinitionIn>(status, &body)?.into())),
        }
    }

    fn namespace_versions(&self, namespace: &str) -> Result<Vec<NamespaceDefinition>> {
        #[derive(Deserialize)]
        struct VersionsIn {
            versions: Vec<DefinitionIn>,
        }
        let request = self.auth(self.agent.get(self.namespace_url(namespace, "/versions")));
        match self.read(request.call(), "namespace versions")? {
            (404, _) => Ok(Vec::new()),
            (status, body) => Ok(self
                .parse::<VersionsIn>(status, &body)?
                .versions
                .into_iter()
                .map(Into::into)
                .collect()),
        }
    }

    fn namespace_version(
        &self,
        namespace: &str,
        version: u64,
    ) -> Result<Option<NamespaceDefinition>> {
        let rest = format!("/versions/{version}");
        let request = self.auth(self.agent.get(self.namespace_url(namespace, &rest)));
        match self.read(request.call(), "namespace version")? {
            (404, _) => Ok(None),
            (status, body) => Ok(Some(self.parse::<DefinitionIn>(status, &body)?.into())),
        }
    }

    fn define_namespace(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
        force: bool,
    ) -> Result<(NamespaceDefinition, bool)> {
        let rest = if force { "?force=true" } else { "" };
        let request = self
            .auth(self.agent.put(self.namespace_url(namespace, rest)))
            .header("Content-Type", "application/json");
        let request = Self::precondition(request, condition, "set namespace")?;
        let body = serde_json::to_string(&definition)?;
        let (status, body) = self.read(request.send(&body), "set namespace")?;
        if status == 404 {
            bail!("set namespace: {body}");
        }
        let stored: DefinitionIn = self.parse(status, &body)?;
        Ok((stored.into(), status == 201))
    }

    fn alias_builds(&self, namespace: &str) -> Result<Vec<AliasBuild>> {
        let request = self.auth(self.agent.get(self.namespace_url(namespace, "")));
        match self.read(request.call(), "get namespace")? {
            (404, _) => Ok(Vec::new()),
            (status, body) => self
                .parse::<DefinitionIn>(status, &body)?
                .aliases
                .into_iter()
                .map(AliasIn::into_build)
                .collect(),
        }
    }

    fn step_alias_builds(&self) -> Result<()> {
        // The server builds in the background: wait a little before asking again.
        std::thread::sleep(Duration::from_millis(250));
        Ok(())
    }

    fn retry_alias_build(&self, namespace: &str, template: &str) -> Result<()> {
        let request = self
            .auth(
                self.agent
                    .post(self.namespace_url(namespace, "/aliases/retry")),
            )
            .header("Content-Type", "application/json");
        let body = serde_json::json!({ "path": template }).to_string();
        let (status, body) = self.read(request.send(&body), "retry alias build")?;
        if status == 404 {
            return Err(
                Failure::NotFound(format!("namespace {namespace} has no definition")).into(),
            );
        }
        self.parse::<DefinitionIn>(status, &body)?;
        Ok(())
    }

    fn delete_namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>> {
        // The definition removed, as a local delete answers: read first, then removed at that
        // version (a change in between fails rather than removing what was not shown).
        let Some(current) = self.namespace(namespace)? else {
            return Ok(None);
        };
        let request = self
            .auth(self.agent.delete(self.namespace_url(namespace, "")))
            .header("If-Match", &format!("\"{}\"", current.version));
        let response = request
            .call()
            .context("remove namespace: cannot reach the server")?;
        // 204 has no body; anything else is an error (or not PathDB) that `read` names.
        if response.status().as_u16() == 204 {
            return Ok(Some(current));
        }
        match self.read(Ok(response), "remove namespace")? {
            (404, _) => Ok(None),
            (status, body) => Err(self.not_pathdb(status, "application/json", &body)),
        }
    }

    fn roles(&self) -> Result<Vec<StoredRole>> {
        let request = self.auth(self.agent.get(format!("{}/v1/roles", self.base)));
        let (status, body) = self.read(request.call(), "list roles")?;
        let roles: RolesIn = self.parse(status, &body)?;
        Ok(roles.roles.into_iter().map(Into::into).collect())
    }

    fn role(&self, name: &str) -> Result<Option<StoredRole>> {
        let request = self.auth(self.agent.get(self.role_url(name)));
        match self.read(request.call(), "get role")? {
            (404, _) => Ok(None),
            (status, body) => Ok(Some(self.parse::<RoleIn>(status, &body)?.into())),
        }
    }

    fn put_role(
        &self,
        name: &str,
        role: &Role,
        condition: Option<Condition>,
    ) -> Result<(StoredRole, bool)> {
        let request = self
            .auth(self.agent.put(self.role_url(name)))
            .header("Content-Type", "application/json");
        let request = Self::precondition(request, condition, "set role")?;
        let (status, body) = self.read(request.send(&serde_json::to_string(role)?), "set role")?;
        if status == 404 {
            bail!("set role: {body}");
        }
        Ok((self.parse::<RoleIn>(status, &body)?.into(), status == 201))
    }

    fn delete_role(&self, name: &str) -> Result<Option<StoredRole>> {
        // The role removed, as a local delete answers: read first, then removed at that version.
        let Some(current) = self.role(name)? else {
            return Ok(None);
        };
        let request = self
            .auth(self.agent.delete(self.role_url(name)))
            .header("If-Match", &format!("\"{}\"", current.version));
        let response = request
            .call()
            .context("remove role: cannot reach the server")?;
        if response.status().as_u16() == 204 {
            return Ok(Some(current));
        }
        match self.read(Ok(response), "remove role")? {
            (404, _) => Ok(None),
            (status, body) => Err(self.not_pathdb(status, "application/json", &body)),
        }
    }

    fn create_token(&self, token: &NewToken) -> Result<(TokenInfo, String)> {
        let request = self
            .auth(self.agent.post(format!("{}/v1/tokens", self.base)))
            .header("Content-Type", "application/json");
        let body = serde_json::json!({
            "role": token.role,
            "vars": token.vars,
            "expires_at": token.expires_at.map(|t| t.0),
            "description": token.description,
        });
        let (status, body) = self.read(request.send(&body.to_string()), "create token")?;
        let issued: IssuedIn = self.parse(status, &body)?;
        Ok((issued.info.into(), issued.token))
    }

    fn tokens(&self) -> Result<Vec<TokenInfo>> {
        let request = self.auth(self.agent.get(format!("{}/v1/tokens", self.base)));
        let (status, body) = self.read(request.call(), "list tokens")?;
        let tokens: TokensIn = self.parse(status, &body)?;
        Ok(tokens.tokens.into_iter().map(Into::into).collect())
    }

    fn revoke_token(&self, id: &str) -> Result<bool> {
        let request = self.auth(self.agent.delete(format!("{}/v1/tokens/{id}", self.base)));
        let response = request
            .call()
            .context("revoke token: cannot reach the server")?;
        if response.status().as_u16() == 204 {
            return Ok(true);
        }
        match self.read(Ok(response), "revoke token")? {
            (404, _) => Ok(false),
            (status, body) => Err(self.not_pathdb(status, "application/json", &body)),
        }
    }

    fn check_schema(
        &self,
        namespace: &str,
        schema: &serde_json::Value,
        migrate: &[pathdb_store::MigrationStep],
        _progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck> {
        let request = self
            .auth(self.agent.put(self.namespace_url(namespace, "")))
            .query("dry_run", "true")
            .header("Content-Type", "application/json");
        let body = serde_json::json!({ "schema": schema, "migrate": migrate }).to_string();
        let (status, body) = self.read(request.send(&body), "check namespace")?;
        if status == 404 {
            bail!("check namespace: {body}");
        }
        let check: DryRunIn = self.parse(status, &body)?;
        Ok(SchemaCheck {
            checked: check.checked,
            violating: check.violating,
            first: check
                .first
                .into_iter()
                .map(ViolatingIn::into_item)
                .collect::<Result<_>>()?,
        })
    }

    fn namespace_violations(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ViolationPage> {
        let mut request = self
            .auth(self.agent.get(self.namespace_url(namespace, "/violations")))
            .query("limit", limit.to_string());
        if let Some(c) = &cursor {
            request = request.query("page_token", c);
        }
        match self.read(request.call(), "namespace violations")? {
            (404, body) => {
                let message =
                    serde_json::from_str::<ErrorIn>(&body).map_or(body, |e| e.error.message);
                Err(Failure::NotFound(message).into())
            }
            (status, body) => {
                let page: ViolationsIn = self.parse(status, &body)?;
                Ok(ViolationPage {
                    items: page
                        .items
                        .into_iter()
                        .map(ViolatingIn::into_item)
                        .collect::<Result<_>>()?,
                    checked: page.checked,
                    cursor: page.next_page_token,
                })
            }
        }
    }
}

/// A reader that reports how much of its input was read (sent).
struct Progress<'a, R> {
    inner: R,
    done: u64,
    total: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

impl<R: std::io::Read> std::io::Read for Progress<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        (self.progress)(self.done, self.total);
        Ok(n)
    }
}

/// A role as the server answers it.
#[derive(Deserialize)]
struct RoleIn {
    name: String,
    rules: Vec<pathdb_store::Rule>,
    description: Option<String>,
    version: u64,
    created_at: i64,
    modified_at: i64,
    builtin: bool,
}

impl From<RoleIn> for StoredRole {
    fn from(r: RoleIn) -> StoredRole {
        StoredRole {
            name: r.name,
            version: r.version,
            created_at: Timestamp(r.created_at),
            modified_at: Timestamp(r.modified_at),
            role: Role {
                rules: r.rules,
                description: r.description,
            },
            builtin: r.builtin,
        }
    }
}

#[derive(Deserialize)]
struct RolesIn {
    roles: Vec<RoleIn>,
}

/// A token as the server lists it.
#[derive(Deserialize)]
struct TokenIn {
    id: String,
    role: String,
    #[serde(default)]
    vars: serde_json::Map<String, serde_json::Value>,
    description: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    last_used_at: Option<i64>,
}

impl From<TokenIn> for TokenInfo {
    fn from(t: TokenIn) -> TokenInfo {
        TokenInfo {
            id: t.id,
            role: t.role,
            vars: t.vars,
            description: t.description,
            created_at: Timestamp(t.created_at),
            expires_at: t.expires_at.map(Timestamp),
            last_used_at: t.last_used_at.map(Timestamp),
        }
    }
}

#[derive(Deserialize)]
struct TokensIn {
    tokens: Vec<TokenIn>,
}

#[derive(Deserialize)]
struct IssuedIn {
    token: String,
    #[serde(flatten)]
    info: TokenIn,
}
