// The PathDB console: one page that reads its key path from the URL (/ui/{path}) and talks to
// the /v1 API of the server that served it. Plain DOM, no framework: the file is embedded in the
// binary and must work offline with no build step (docs/console.md).

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "pathdb.token";
const MERGE_PATCH = "application/merge-patch+json";
// How many times a save re-sends its merge patch on top of writes to other members before it
// shows the conflict instead (each retry follows a write by someone else).
const MERGE_RETRIES = 5;

const state = {
  path: null, // key path text with its leading '/', or null at the root (the groups)
  item: null, // the item at `path`, as the API returned it
  session: null,
  pages: [null], // page tokens of the pages seen so far: pages[i] starts page i
  page: 0,
  ttlTimer: null,
  history: [],
  generation: 0, // of render(): a slower, older navigation must not paint over a newer one
  editing: null, // {version, value} of the item when "Edit" opened it: what a save diffs against
  children: 0, // children shown on the current page
  view: "node", // "node" (a key path or the groups), "ns-list", "ns-edit" or "ns-violations"
  admin: false, // whether the session may administer (namespace definitions, roles, tokens, backups)
  roles: [], // the roles the Roles & tokens page listed
  role: null, // {name, version}: the role the editor opened (version null: a new role)
  revoking: null, // the id of the token the revoke dialog asks about
  deleting: null, // {name, version}: the role the delete dialog asks about
  nsPages: [null], // page tokens of the namespace list, as `pages`
  nsPage: 0,
  ns: null, // {name, def}: the definition the editor opened (def null: not defined yet)
  nsPending: null, // the body a dry run checked, which "Save" sends
  nsForce: false, // the dry run found the body incompatible: "Save anyway" forces it
  viol: null, // {name, token, checked, found}: the violations view's scan so far
  alias: null, // the alias path the item was read through (its URL's path), or null
  itemDef: null, // the definition of the item's namespace (its alias templates), or null
  itemVersions: [], // the kept versions of the item's namespace (numbers, oldest first)
  itemShown: null, // the item as read in another schema version (Schema-Version), or null: as stored
  aliasListing: false, // whether the children shown are items listed under an alias prefix
  poll: 0, // bumped by every navigation: a poll of alias builds runs only for its own page
  pollTimer: null,
  archiveTimer: null, // the Backups page's next read of /v1/archive
  archiveReads: 0, // reads of /v1/archive started: an older answer must not paint over a newer one
  backingUp: false, // whether a backup is downloading
};

// ---------------------------------------------------------------------------------------------
// Paths and URLs

/** Percent-encodes a key path for /v1/items and /ui, as the CLI does (keeps `/-_.~!`). */
function urlPath(text) {
  let out = "";
  for (const byte of new TextEncoder().encode(text.replace(/^\//, ""))) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\/\-_.~!]/.test(c) ? c : "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

function uiHref(path) {
  return path ? "/ui/" + urlPath(path) : "/ui/";
}

/** The key path the URL names, or null for the root. */
function pathFromLocation() {
  const rest = location.pathname.replace(/^\/ui\/?/, "");
  if (!rest) return null;
  try {
    return "/" + decodeURIComponent(rest);
  } catch {
    return "/" + rest;
  }
}

/** Elements of a canonical key path: the text between '/' that are not escaped with '%'. */
function splitPath(text) {
  const parts = [];
  let current = "";
  for (let i = 1; i < text.length; i++) {
    const c = text[i];
    if (c === "%" && i + 1 < text.length) {
      current += c + text[i + 1];
      i++;
    } else if (c === "/") {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The canonical text of a string id, as the server prints it: '%' and '/' escaped with '%', and
 * the first character too when the text would read as another type (an integer, a UUID, a
 * leading '~' for bytes or '!' for descending).
 */
function stringIdText(raw) {
  const text = raw.replace(/%/g, "%%").replace(/\//g, "%/");
  const ambiguous = /^-?[0-9]+$/.test(raw) || UUID_SHAPE.test(raw) || /^[~!]/.test(raw);
  return ambiguous ? "%" + text : text;
}

/** Single-quotes a word for a POSIX shell. */
function sh(text) {
  return /^[A-Za-z0-9_\/\-.:=]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'";
}

// ---------------------------------------------------------------------------------------------
// The API

class ApiError extends Error {
  constructor(status, code, message, details = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details; // the API's whole `error` object (a 422 carries `violations`)
  }
}

async function api(method, url, { body, headers = {}, allow = [] } = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const h = { Accept: "application/json", ...headers };
  if (token) h.Authorization = "Bearer " + token;
  if (body !== undefined && !("Content-Type" in h)) h["Content-Type"] = "application/json";
  const response = await fetch(url, { method, headers: h, body, cache: "no-store" });
  if (response.ok || allow.includes(response.status)) {
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : null };
  }
  throw await apiError(response);
}

/** The ApiError of a response that is not ok: the API's `error` object, or its status line. */
async function apiError(response) {
  let code = "http_" + response.status;
  let message = response.statusText;
  let details = null;
  try {
    const e = (await response.json()).error;
    code = e.code;
    message = e.message;
    details = e;
  } catch {
    // Not the API's error shape (a proxy?): keep the status line.
  }
  return new ApiError(response.status, code, message, details);
}

function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    showSignIn(error.message);
    return;
  }
  $("error-code").textContent = error.code === "forbidden" ? "Not allowed:" : error.code || "error";
  $("error-message").replaceChildren(...errorMessage(error));
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

// ---------------------------------------------------------------------------------------------
// Formatting

function when(micros) {
  return micros == null ? "—" : new Date(micros / 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

function countdown(micros) {
  const left = Math.round(micros / 1000 - Date.now()) / 1000;
  if (left <= 0) return "expired";
  const s = Math.floor(left);
  const parts = [];
  if (s >= 86400) parts.push(Math.floor(s / 86400) + "d");
  if (s >= 3600) parts.push(Math.floor((s % 86400) / 3600) + "h");
  if (s >= 60) parts.push(Math.floor((s % 3600) / 60) + "m");
  parts.push((s % 60) + "s");
  return "in " + parts.join(" ") + " (" + when(micros) + ")";
}

/** A line diff (longest common subsequence): lines prefixed with "  ", "- " or "+ ". */
function diffLines(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push(["same", "  " + a[i]]);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push(["del", "- " + a[i++]]);
    } else {
      out.push(["add", "+ " + b[j++]]);
    }
  }
  while (i < n) out.push(["del", "- " + a[i++]]);
  while (j < m) out.push(["add", "+ " + b[j++]]);
  return out;
}

function renderDiff(pre, before, after) {
  pre.replaceChildren(
    ...diffLines(before, after).map(([kind, line]) => {
      const span = document.createElement("span");
      span.className = kind;
      span.textContent = line + "\n";
      return span;
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Session and sign-in

function showSignIn(message) {
  $("main").hidden = true;
  $("ns-page").hidden = true;
  $("access-page").hidden = true;
  $("backups-page").hidden = true;
  $("signin").hidden = false;
  $("signout").hidden = !sessionStorage.getItem(TOKEN_KEY);
  if (message && sessionStorage.getItem(TOKEN_KEY)) {
    $("error-code").textContent = "unauthorized";
    $("error-message").textContent = message;
    $("error").hidden = false;
  }
  $("token").focus();
}

async function loadSession() {
  try {
    state.session = (await api("GET", "/v1/session")).json;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      showSignIn(error.message);
      return false;
    }
    throw error;
  }
  const session = state.session;
  const scope = session.scope;
  // Write controls show when some rule of the token's role allows writing (older servers say
  // only the scope); the server checks each path anyway.
  const readOnly = Array.isArray(session.rules)
    ? !session.rules.some((r) => (r.allow || []).includes("write"))
    : scope !== "read-write" && scope !== "admin";
  // Definitions, roles and tokens need `admin`; a server without tokens (loopback only) allows everything.
  state.admin = typeof session.admin === "boolean" ? session.admin : scope === "admin" || !session.auth_required;
  document.body.classList.toggle("read-only", readOnly);
  document.body.classList.toggle("not-admin", !state.admin);
  $("nav-access").hidden = !state.admin;
  $("nav-backups").hidden = !state.admin;
  $("session").hidden = !session.auth_required;
  $("session").open = false;
  $("scope").textContent =
    scope === "admin" ? "admin token" : scope === "read" ? "read-only token" : scope === "read-write" ? "read-write token"
      : `${session.role || "custom"} token` + (readOnly ? " (read-only)" : "");
  $("session-panel").replaceChildren(...sessionSummary(session));
  $("signout").hidden = !session.auth_required;
  $("signin").hidden = true;
  // `main` appears with render()'s first paint, whole, rather than empty and then filled in.
  return true;
}

const VIA = {
  open: "no token needed (this server has no tokens)",
  config: "a token from the server's configuration",
  token: "an API token",
  jwt: "a JWT",
};

/** The names a rule's path template takes from the token's vars: `{team}`, `{org.id}`. */
function templateVars(path) {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
}

/** "read, write": what a rule allows. */
function allowText(rule) {
  return (rule.allow || []).join(", ") || "nothing";
}

/** The value of var `name` (dotted names reach into JWT claims: `org.id`), or undefined. */
function lookupVar(vars, name) {
  if (has(vars, name)) return vars[name];
  let value = vars;
  for (const part of name.split(".")) {
    if (!isObject(value) || !has(value, part)) return undefined;
    value = value[part];
  }
  return value;
}

/** A var's value as text: `7`, `"alice"`. */
function varText(value) {
  return typeof value === "string" && !/^-?[0-9]+$/.test(value) ? value : JSON.stringify(value);
}

/** One rule as a person reads it: "/team-{team}/** read, write — team = 7" (with a token's vars). */
function ruleLine(rule, vars = null) {
  const li = el("li", "rule");
  li.append(el("code", "", rule.path), " " + allowText(rule));
  if (vars === null) return li;
  const bound = templateVars(rule.path).map((name) => {
    const value = lookupVar(vars, name);
    return `${name} = ${value === undefined ? "(not set: matches nothing)" : varText(value)}`;
  });
  if (bound.length) li.append(" — " + bound.join(", "));
  return li;
}

/** What the signed-in token may do: its role, how it was recognised, its rules with their vars. */
function sessionSummary(session) {
  const head = el("p");
  head.append("Role ", el("strong", "", session.role || session.scope || "?"), ", via " + (VIA[session.via] || session.via || "?"));
  if (session.token_id) head.append(" ", el("code", "", session.token_id));
  head.append(".");
  const rules = session.rules || [];
  if (!rules.length) return [head, el("p", "", "Its role has no rules: this token may do nothing.")];
  const list = el("ul", "rules");
  list.append(...rules.map((r) => ruleLine(r, session.vars || {})));
  return [head, el("p", "muted", "It may:"), list];
}

/** After a sign-in: what the token may do, until the next navigation. */
function signedInNotice() {
  const session = state.session;
  if (!session || !session.auth_required) return;
  const rules = session.rules || [];
  const notice = $("notice");
  notice.replaceChildren(`Signed in with role `, el("strong", "", session.role || session.scope), ` (${session.via || "?"}). `);
  if (!rules.length) notice.append("Its role has no rules: this token may do nothing.");
  else {
    notice.append("It may: ");
    rules.forEach((r, i) => {
      if (i) notice.append("; ");
      notice.append(...ruleLine(r, session.vars || {}).childNodes);
    });
    notice.append(".");
  }
  notice.hidden = false;
}

// ---------------------------------------------------------------------------------------------
// Views

function listQuery() {
  const params = new URLSearchParams(location.search);
  return {
    reverse: params.get("reverse") === "true",
    gt: params.get("gt") || "",
    lt: params.get("lt") || "",
    limit: params.get("limit") || "100",
    subtree: params.get("subtree") === "true", // every item below, not only the direct children
    filter: params.get("filter") || "", // a CEL expression (docs/filters.md)
    fields: params.get("fields") || "", // the members of each value to show
    maxScan: params.get("max_scan") || "", // items a page reads at most (the server's default: 1000)
  };
}

/** The query of `GET /v1/list/{path}` for the listing `q` (the URL's) asks for, without a page
 * token: the console's requests and the equivalent curl are the same. */
function listParams(q) {
  const params = new URLSearchParams();
  if (!q.subtree) params.set("children", "true");
  params.set("limit", q.limit);
  if (q.reverse) params.set("reverse", "true");
  if (q.gt) params.set("gt", q.gt);
  if (q.lt) params.set("lt", q.lt);
  if (q.filter) params.set("filter", q.filter);
  if (q.fields) params.set("fields", q.fields);
  if (q.maxScan) params.set("max_scan", q.maxScan);
  return params;
}

function renderCrumbs() {
  const nav = $("crumbs");
  nav.replaceChildren();
  if (!state.path) return;
  let prefix = "";
  for (const part of splitPath(state.path)) {
    prefix += "/" + part;
    const a = document.createElement("a");
    a.href = uiHref(prefix);
    a.textContent = "/" + part;
    nav.append(a);
  }
}

async function render() {
  state.poll++;
  $("session").open = false;
  if (accessRoute()) return renderAccess();
  if (backupsRoute()) return renderBackups();
  const route = namespaceRoute();
  if (route) return renderNamespaces(route);
  const generation = ++state.generation;
  clearError();
  const path = pathFromLocation();
  state.path = path;
  state.pages = [null];
  state.page = 0;
  // Fetch everything first and paint it in one go: the page changes once per navigation,
  // without sections appearing one after another and pushing each other down.
  const jobs = [fetchChildren()];
  if (path) jobs.push(fetchItem(), fetchKey());
  const results = await Promise.allSettled(jobs);
  if (generation !== state.generation) return; // a later navigation owns the page now
  const q = listQuery();
  $("reverse").checked = q.reverse;
  $("gt").value = q.gt;
  $("lt").value = q.lt;
  $("limit").value = q.limit;
  $("list-subtree").checked = q.subtree;
  $("filter").value = q.filter;
  $("fields").value = q.fields;
  $("max-scan").value = q.maxScan;
  document.title = (path || "Groups") + " · PathDB";
  renderCrumbs();
  $("node-path").textContent = path || "Groups";
  // At the root the page's title says "Groups" already, and there are no bounds or reverse
  // (groups list forward): the panel has neither title nor form there.
  $("children-title").textContent = q.subtree ? "Subtree" : "Children";
  $("children-title").hidden = !path;
  $("list-form").hidden = !path;
  $("key").hidden = !path;
  $("history").hidden = true;
  $("item").hidden = true;
  $("no-item").hidden = true;
  $("create").hidden = false;
  state.view = "node";
  $("ns-page").hidden = true;
  $("access-page").hidden = true;
  $("backups-page").hidden = true;
  $("nav-access").removeAttribute("aria-current");
  $("nav-backups").removeAttribute("aria-current");
  $("nav-namespaces").removeAttribute("aria-current");
  $("main").hidden = false;
  state.item = null;
  state.alias = null;
  state.itemDef = null;
  state.itemVersions = [];
  state.itemShown = null;
  state.editing = null;
  clearInterval(state.ttlTimer);
  updatePreview();
  clearViolations("new");
  $("notice").hidden = true;
  state.children = 0;
  state.aliasListing = false;
  for (const r of results) {
    if (r.status === "fulfilled") r.value();
    else showError(r.reason);
  }
  // Something to move or delete: the item, or a node's items below. Not an alias or an alias
  // prefix: aliases move and go with their items, and a subtree action there touches nothing.
  $("subtree").hidden = !path || state.alias !== null || state.aliasListing || (!state.item && state.children === 0);
}

/**
 * The item (at the path, or the one an alias path names), its history and the definition of its
 * namespace (for its aliases) with its kept versions; resolves to the function that shows them.
 */
async function fetchItem() {
  const path = state.path;
  const reply = await api("GET", "/v1/items/" + urlPath(path), { allow: [404] });
  const found = reply.status !== 404;
  // Read through an alias, `path` is the item's own: its history and namespace are there.
  const own = found ? reply.json.path : path;
  const [history, [def, versions]] = await Promise.all([
    api("GET", "/v1/history/" + urlPath(own) + "?limit=100"),
    found ? fetchItemDefinition(own).then(async (d) => [d, await fetchSchemaVersions(d)]) : [null, []],
  ]);
  return () => {
    state.itemDef = def;
    state.itemVersions = versions;
    state.itemShown = null;
    if (!found) {
      state.item = null;
      state.alias = null;
      clearInterval(state.ttlTimer);
      $("item").hidden = true;
      $("no-item").hidden = false;
    } else {
      state.item = reply.json;
      state.alias = reply.json.alias ?? null;
      showItem();
    }
    showHistory(history.json.items);
  };
}

/** The definition of the namespace of the item at `path`, or null (none, or not readable: the
 * item shows without its aliases then). */
async function fetchItemDefinition(path) {
  try {
    const reply = await api("GET", nsUrl(namespaceOf(path)), { allow: [404] });
    return reply.status === 404 ? null : reply.json;
  } catch {
    return null;
  }
}

/** The versions a definition keeps (numbers, oldest first): none to pick from without one, or
 * with only its first (a read that fails leaves the picker out too). */
async function fetchSchemaVersions(def) {
  if (!def || def.version < 2) return [];
  try {
    const reply = await api("GET", nsUrl(def.namespace) + "/versions");
    return reply.json.versions.map((v) => v.version);
  } catch {
    return [];
  }
}

async function loadItem() {
  (await fetchItem())();
}

function showItem() {
  const item = state.item;
  $("item").hidden = false;
  $("no-item").hidden = true;
  $("item-version").textContent = item.version;
  $("item-created").textContent = when(item.created_at);
  $("item-modified").textContent = when(item.modified_at);
  state.itemShown = null;
  showItemValue();
  showItemAliases();
  $("editor-form").hidden = true;
  $("conflict").hidden = true;
  $("saved").hidden = true;
  clearViolations("editor");
  clearInterval(state.ttlTimer);
  const tick = () => ($("ttl").textContent = item.expires_at == null ? "never" : countdown(item.expires_at));
  tick();
  if (item.expires_at != null) state.ttlTimer = setInterval(tick, 1000);
}

/**
 * The item's value, as stored or as a client of another schema version reads it, with its
 * `schema_version` and the picker of the namespace's kept versions.
 */
function showItemValue() {
  const item = state.item;
  const shown = state.itemShown || item;
  $("value").textContent = pretty(shown.value);
  // An item of a namespace without a definition has no schema version.
  const versioned = item.schema_version != null;
  for (const e of document.querySelectorAll(".item-schema")) e.hidden = !versioned;
  $("item-schema-note").hidden = !state.itemShown;
  if (!versioned) return;
  const ns = namespaceOf(item.path);
  $("item-schema-version").textContent = shown.schema_version;
  $("item-schema-ns").textContent = ns;
  $("item-schema-ns").href = nsHref(ns);
  const versions = [...state.itemVersions];
  if (!versions.includes(item.schema_version)) versions.push(item.schema_version);
  const current = state.itemDef ? state.itemDef.version : item.schema_version;
  $("item-schema-pick").replaceChildren(
    ...versions.map((v) => {
      const option = el("option", "", `version ${v}` + (v === current ? " (current)" : ""));
      option.value = v;
      option.selected = v === shown.schema_version;
      return option;
    }),
  );
  $("item-schema-picker").hidden = versions.length < 2;
  if (state.itemShown) {
    $("item-schema-note").replaceChildren(
      `The value as a client of version ${shown.schema_version} reads it (`,
      el("code", "", `Schema-Version: ${ns}=${shown.schema_version}`),
      `): the server translated it with the migration steps. Edit opens it in version ${item.schema_version}.`,
    );
  }
}

/** The picker: reads the item again with `Schema-Version` for the version picked (the one read
 * without it is kept, and shown again for its own version). */
async function pickSchemaVersion() {
  const item = state.item;
  const version = Number($("item-schema-pick").value);
  clearError();
  if (version === item.schema_version) {
    state.itemShown = null;
    showItemValue();
    return;
  }
  const ns = namespaceOf(item.path);
  try {
    const reply = await api("GET", "/v1/items/" + urlPath(item.path), { headers: { "Schema-Version": `${ns}=${version}` } });
    if (state.item !== item || Number($("item-schema-pick").value) !== version) return; // moved on meanwhile
    state.itemShown = reply.json;
  } catch (e) {
    if (state.item !== item) return;
    showError(e);
  }
  showItemValue();
}

async function loadHistory() {
  const reply = await api("GET", "/v1/history/" + urlPath(ownPath()) + "?limit=100");
  showHistory(reply.json.items);
}

function showHistory(items) {
  state.history = items;
  $("history").hidden = !state.item && state.history.length === 0;
  $("history-empty").hidden = state.history.length > 0;
  $("history-table").hidden = state.history.length === 0;
  const rows = state.history.map((rev, i) => {
    const tr = document.createElement("tr");
    tr.dataset.version = rev.version;
    const radio = (name, checked) => {
      const td = document.createElement("td");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = name;
      input.value = i;
      input.checked = checked;
      input.setAttribute("aria-label", name + " version " + rev.version);
      input.addEventListener("change", showDiff);
      td.append(input);
      return td;
    };
    const v = document.createElement("td");
    v.textContent = rev.version;
    const m = document.createElement("td");
    m.textContent = when(rev.modified_at);
    tr.append(radio("from", i === 1), radio("to", i === 0), v, m);
    return tr;
  });
  $("history-rows").replaceChildren(...rows);
  showDiff();
}

/** The diff from the revision picked in "from" to the one in "to" (newest two by default). */
function showDiff() {
  const pick = (name) => {
    const el = document.querySelector(`input[name=${name}]:checked`);
    return el ? state.history[Number(el.value)] : null;
  };
  const from = pick("from");
  const to = pick("to");
  if (!from || !to) {
    $("diff").replaceChildren();
    return;
  }
  $("diff").dataset.from = from.version;
  $("diff").dataset.to = to.version;
  renderDiff($("diff"), pretty(from.value), pretty(to.value));
}

async function loadChildren() {
  (await fetchChildren())();
}

/** One page of children (of groups at the root); resolves to the function that shows it. */
async function fetchChildren() {
  const q = listQuery();
  const token = state.pages[state.page];
  let url;
  if (state.path) {
    const params = listParams(q);
    if (token) params.set("page_token", token);
    url = "/v1/list/" + urlPath(state.path) + "?" + params;
  } else {
    const params = new URLSearchParams({ limit: q.limit });
    if (token) params.set("page_token", token);
    url = "/v1/groups?" + params;
  }
  let reply;
  try {
    reply = await api("GET", url);
  } catch (e) {
    // A filter (or fields, or max_scan) the server refuses is said under the boxes, where it is
    // fixed.
    if (listingRefusal(e)) return () => showFilterError(e);
    throw e;
  }
  // A node (a child with items below it and none of its own) shows as a folder: a trailing "/".
  // Under an alias prefix each item comes with `alias`, its place in the listing.
  const entries = state.path
    ? reply.json.items.map((i) => ({ path: i.path, node: i.node === true, alias: i.alias ?? null, value: i.value }))
    : reply.json.groups.map((path) => ({ path, node: false, alias: null }));
  return () => showChildren(entries, reply.json.next_page_token, reply.json.scanned);
}

/**
 * One page of the listing. `scanned` (a /v1/list page's) is how many items the page read,
 * matching the filter or not: a filtered page may show nothing and still have a `next` page, when
 * it stopped after reading its most (max_scan) before finding a match.
 */
function showChildren(entries, next, scanned) {
  const q = listQuery();
  const filtered = state.path !== null && q.filter !== "";
  const projected = state.path !== null && q.fields !== "";
  // One fragment, one DOM insertion: a page of 1000 renders in one layout.
  const fragment = document.createDocumentFragment();
  const paths = entries.map((e) => e.path);
  let aliased = false;
  for (const { path, node, alias, value } of entries) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.className = node ? "child node" : "child";
    // An item listed under an alias prefix: its alias (its place in this listing), then a link
    // to its own path.
    const at = alias ?? path;
    a.href = uiHref(at);
    a.textContent = node ? at + "/" : at;
    if (node) a.title = "No item here: items below it";
    li.append(a);
    if (alias) {
      aliased = true;
      li.className = "aliased";
      a.title = "An alias of " + path;
      const own = el("a", "own", path);
      own.href = uiHref(path);
      own.title = "The item's own path";
      li.append(el("span", "arrow", "→"), own);
    }
    // With `fields`, each item's value as the projection left it, beside its path.
    if (projected && !node && value !== undefined) {
      li.classList.add("projected");
      li.append(el("code", "fields", JSON.stringify(value)));
    }
    fragment.append(li);
  }
  state.aliasListing = aliased;
  $("children").replaceChildren(fragment);
  hideFilterError();
  const empty = $("children-empty");
  empty.hidden = paths.length > 0;
  // An empty filtered page is not the end while a next one follows: it read its most and found
  // no match yet.
  const read = plural(scanned ?? 0, "item");
  empty.textContent = !filtered || !scanned
    ? "Nothing here."
    : next
      ? `No matches in the ${read} read; more follow.`
      : `No matches in the ${read} read.`;
  empty.classList.toggle("more", filtered && !!next && paths.length === 0);
  state.children = paths.length;
  state.pages.length = state.page + 1;
  if (next) state.pages.push(next);
  $("prev").disabled = state.page === 0;
  $("next").disabled = !next;
  const info = [];
  if (paths.length || filtered) {
    info.push(`page ${state.page + 1}`, `${paths.length.toLocaleString("en-US")} shown`);
    if (scanned !== undefined) info.push(`scanned ${scanned.toLocaleString("en-US")}`);
  }
  $("page-info").textContent = info.join(" · ");
  if (scanned === undefined) delete $("page-info").dataset.scanned;
  else $("page-info").dataset.scanned = scanned;
  document.body.dataset.renderedAt = performance.now().toFixed(1);
  document.body.dataset.renderedPage = state.page;
}

/** Whether `error` refuses the listing's filter, fields or max_scan (a 400 about one of them). */
function listingRefusal(error) {
  if (!(error instanceof ApiError) || !state.path) return false;
  return error.code === "invalid_filter" || (error.status === 400 && /\b(fields|max_scan)\b/.test(error.message));
}

/**
 * A listing the server refused for its filter, its fields or its max_scan, said under the boxes.
 * For a filter (400 `invalid_filter`), the filter too, with the character at `position` marked
 * (a character offset from 0, in Unicode characters as the server counts them; at the end when
 * the filter ends too soon), and that character selected in the box, to fix it there. The list
 * is left empty.
 */
function showFilterError(error) {
  const isFilter = error.code === "invalid_filter";
  const box = isFilter ? $("filter") : /\bfields\b/.test(error.message) ? $("fields") : $("max-scan");
  const chars = Array.from($("filter").value);
  const at = Math.max(0, Math.min(error.details?.position ?? 0, chars.length));
  $("filter-error-message").textContent = error.message;
  $("filter-error-text").hidden = !isFilter;
  if (isFilter) {
    const mark = el("mark", at < chars.length ? "" : "end", at < chars.length ? chars[at] : " ");
    mark.title = at < chars.length ? `character ${at}` : "the end of the filter";
    $("filter-error-text").replaceChildren(chars.slice(0, at).join(""), mark, chars.slice(at + 1).join(""));
    $("filter-error").dataset.position = at;
  } else {
    delete $("filter-error").dataset.position;
  }
  $("filter-error").hidden = false;
  box.setAttribute("aria-invalid", "true");
  $("children").replaceChildren();
  $("children-empty").hidden = true;
  state.children = 0;
  state.aliasListing = false;
  state.pages.length = state.page + 1;
  $("prev").disabled = state.page === 0;
  $("next").disabled = true;
  $("page-info").textContent = "";
  delete $("page-info").dataset.scanned;
  box.focus();
  if (isFilter) {
    // Offsets in the box count UTF-16 units.
    const start = chars.slice(0, at).join("").length;
    box.setSelectionRange(start, start + (chars[at] || "").length);
  }
  document.body.dataset.renderedAt = performance.now().toFixed(1);
  document.body.dataset.renderedPage = state.page;
}

function hideFilterError() {
  $("filter-error").hidden = true;
  for (const id of ["filter", "fields", "max-scan"]) $(id).removeAttribute("aria-invalid");
}

/** The key explained; resolves to the function that shows it. */
async function fetchKey() {
  const key = (await api("GET", "/v1/keys/" + urlPath(state.path))).json;
  return () => showKey(key);
}

/** Hex that wraps only between bytes: one text node a byte, a <wbr> between them (copying it
 * gives the hex without spaces). */
function hexNode(hex) {
  const span = document.createElement("span");
  span.className = "hex";
  (hex.match(/../g) || []).forEach((pair, i) => {
    if (i > 0) span.append(document.createElement("wbr"));
    span.append(pair);
  });
  return span;
}

/** Shows a command per line, each its own block, so that a long one wraps with a hanging
 * indent instead of hiding behind a scrollbar. */
function showLines(pre, text) {
  pre.replaceChildren(
    ...text.split("\n").map((line) => {
      const span = document.createElement("span");
      span.className = "line";
      span.textContent = line;
      return span;
    }),
  );
}

function showKey(key) {
  const rows = key.segments.map((s) => {
    const tr = document.createElement("tr");
    for (const text of [s.text, s.kind, hexNode(s.bytes_hex), `${s.meta_hex} (len ${s.bytes_hex.length / 2}, type ${s.type_code})`]) {
      const td = document.createElement("td");
      td.append(text);
      tr.append(td);
    }
    return tr;
  });
  $("segments").replaceChildren(...rows);
  const z = key.sizes;
  $("key-sizes").replaceChildren(
    `encoded: ${z.encoded} bytes (${z.segment} segment, ${z.separator} separator, 1 terminator, ` +
      `${z.metadata} metadata); text: ${z.text} bytes; hex `,
    hexNode(key.encoded_hex),
  );
  const q = listQuery();
  const origin = location.origin;
  const auth = state.session && state.session.auth_required ? ` -H "Authorization: Bearer $PATHDB_TOKEN"` : "";
  showLines($("eq-curl"), [
    `# the item`,
    `curl -s${auth} ${sh(origin + "/v1/items/" + urlPath(key.path))}`,
    `# its ${q.subtree ? "subtree" : "children"}, as listed here`,
    `curl -s${auth} ${sh(origin + "/v1/list/" + urlPath(key.path) + "?" + listParams(q))}`,
  ].join("\n"));
  const lsFlags = q.subtree ? ["--limit", q.limit] : ["--children", "--limit", q.limit];
  if (q.reverse) lsFlags.push("--reverse");
  if (q.gt) lsFlags.push("--gt", sh(q.gt));
  if (q.lt) lsFlags.push("--lt", sh(q.lt));
  if (q.filter) lsFlags.push("--filter", sh(q.filter));
  if (q.fields) lsFlags.push("--fields", sh(q.fields));
  if (q.maxScan) lsFlags.push("--max-scan", q.maxScan);
  showLines($("eq-cli"), [
    `pathdb --server ${origin} get ${sh(key.path)}`,
    `pathdb --server ${origin} ls ${sh(key.path)} ${lsFlags.join(" ")}`,
    `pathdb key explain ${sh(key.path)}`,
  ].join("\n"));
  const values = (pairs) => sh(JSON.stringify(Object.fromEntries(pairs.map(([k, v]) => [k, { B: v }]))));
  const query = (comment, range) =>
    [
      `# ${comment}`,
      `aws dynamodb query --table-name pathdb \\`,
      `  --key-condition-expression 'pk = :pk AND sk BETWEEN :a AND :z' \\`,
      `  --filter-expression 'attribute_exists(val)' \\`,
      `  --expression-attribute-values ${values([[":pk", key.pk_base64], [":a", range.start_base64], [":z", range.end_base64]])}`,
    ].join("\n");
  showLines($("eq-dynamodb"), [
    `# the item (pk ${key.pk_base64}, sk ${key.sk_base64})`,
    `aws dynamodb get-item --table-name pathdb --consistent-read \\`,
    `  --key ${values([["pk", key.pk_base64], ["sk", key.sk_base64]])}`,
    query("the node and its subtree (tombstones have no val)", key.subtree),
    query("the descendants; the store keeps the direct children by seeking past each one's subtree", key.descendants),
  ].join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Edits as merge patches (RFC 7396)

/** A JSON object (not an array, not null). */
function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** An own member: JSON.parse makes `__proto__` an ordinary key, which `in` would not see. */
function has(object, key) {
  return Object.hasOwn(object, key);
}

/** Equal JSON values, whatever the order of their members (undefined: no member). */
function sameJson(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && sameJson(a[k], b[k]));
}

/** Whether a merge patch can carry `value` whole: no null as an object's member (a patch reads
 * that as "remove"); arrays are taken as they are, nulls and all. */
function mergeable(value) {
  return value !== null && (!isObject(value) || Object.values(value).every(mergeable));
}

/**
 * The RFC 7396 merge patch that turns the object `before` into the object `after`: members added
 * or changed with their new value (nested objects member by member), removed members as null,
 * arrays and scalars whole. No members: nothing changed. null: a merge patch cannot say it (a
 * member set to null, which a patch would read as "remove"). The patch has no prototype, so a
 * member named `__proto__` is a member like any other.
 */
function mergePatch(before, after) {
  const patch = Object.create(null);
  for (const key of Object.keys(after)) {
    const was = has(before, key) ? before[key] : undefined;
    const now = after[key];
    if (isObject(was) && isObject(now)) {
      const inner = mergePatch(was, now);
      if (inner === null) return null;
      if (Object.keys(inner).length) patch[key] = inner;
    } else if (!sameJson(was, now)) {
      if (!mergeable(now)) return null;
      patch[key] = now;
    }
  }
  for (const key of Object.keys(before)) if (!has(after, key)) patch[key] = null;
  return patch;
}

/**
 * The members a merge patch sets or removes, as JSON Pointers (`/title`, `/meta/tags`), each
 * with whether `current` differs there from `base`, the value the patch was made from: that is,
 * whether someone else changed that member since. Where the patch descends into an object that is
 * an object in both, members are compared one by one; elsewhere the member is compared whole.
 */
function patchedMembers(patch, base, current, prefix = "") {
  const out = [];
  for (const key of Object.keys(patch)) {
    const path = prefix + "/" + key.replace(/~/g, "~0").replace(/\//g, "~1");
    const was = isObject(base) && has(base, key) ? base[key] : undefined;
    const now = isObject(current) && has(current, key) ? current[key] : undefined;
    if (isObject(patch[key]) && isObject(was) && isObject(now)) {
      out.push(...patchedMembers(patch[key], was, now, path));
    } else {
      out.push({ path, theirs: !sameJson(was, now) });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writes

/** The id the server generates on create ("sequence", "uuid", "rand53"), or null. */
function generatedKind() {
  const type = $("new-type").value;
  return type.startsWith("gen-") ? type.slice(4) : null;
}

/** The id text of the create form, or null for "none"; throws with a message for bad input. */
function newIdText() {
  const type = $("new-type").value;
  const raw = $("new-id").value.trim();
  const desc = type.startsWith("desc-") ? "!" : "";
  const base = type.replace("desc-", "");
  if (base === "none") return null;
  if (raw === "") throw new Error("the id is empty");
  if (base === "int") {
    if (!/^-?(0|[1-9][0-9]*)$/.test(raw)) throw new Error("an integer id is decimal digits without leading zeros");
    return desc + raw;
  }
  if (base === "uuid") {
    if (!UUID_SHAPE.test(raw)) throw new Error("a UUID is 8-4-4-4-12 hex digits");
    return raw.toLowerCase();
  }
  if (base === "bytes") {
    const hex = raw.replace(/^0x/, "").replace(/\s+/g, "");
    if (!/^([0-9a-f]{2})+$/i.test(hex)) throw new Error("bytes are written as hex, two digits a byte");
    const bytes = hex.match(/../g).map((h) => parseInt(h, 16));
    const b64 = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    return desc + "~" + b64;
  }
  // A string, escaped as the server prints it.
  return desc + stringIdText(raw);
}

function newPath() {
  const id = newIdText();
  const element = $("new-ns").value.trim() + (id === null ? "" : "-" + id);
  return (state.path || "") + "/" + element;
}

function updatePreview() {
  try {
    const kind = generatedKind();
    const ns = $("new-ns").value.trim();
    $("new-path-preview").textContent = !ns ? "" : kind ? `${state.path || ""}/${ns}-{${kind}}` : newPath();
    $("new-path-preview").classList.remove("bad");
  } catch (e) {
    $("new-path-preview").textContent = e.message;
    $("new-path-preview").classList.add("bad");
  }
}

function generateId() {
  const type = $("new-type").value;
  if (type === "uuid") {
    $("new-id").value = crypto.randomUUID();
  } else if (type.endsWith("bytes")) {
    $("new-id").value = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
  } else if (type.endsWith("int")) {
    // Milliseconds since the epoch: time-ordered, and with `!` newest first.
    $("new-id").value = String(Date.now());
  } else {
    $("new-id").value = Math.random().toString(36).slice(2, 10);
  }
  updatePreview();
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError(0, "invalid_json", "the value is not JSON: " + e.message);
  }
}

async function createItem(event) {
  event.preventDefault();
  clearError();
  clearViolations("new");
  let value;
  try {
    const kind = generatedKind();
    let path = kind ? null : newPath();
    value = parseJson($("new-value").value);
    const params = new URLSearchParams();
    if ($("new-history").checked) params.set("history", "true");
    if ($("new-ttl").value) params.set("ttl_seconds", $("new-ttl").value);
    if (kind) {
      // The server picks the id (docs/changes.md) and answers with the path it created.
      params.set("id", kind);
      const ns = $("new-ns").value.trim();
      const target = state.path ? urlPath(state.path) + "/" + ns : ns;
      const reply = await api("POST", "/v1/items/" + target + "?" + params, {
        body: JSON.stringify(value),
      });
      path = reply.json.path;
    } else {
      // If-None-Match: * creates only: an existing item is a 412, not overwritten.
      await api("PUT", "/v1/items/" + urlPath(path) + "?" + params, {
        body: JSON.stringify(value),
        headers: { "If-None-Match": "*" },
      });
    }
    // A fresh form for the next item (the id type stays: people create runs of one kind).
    for (const id of ["new-ns", "new-id", "new-ttl"]) $(id).value = "";
    $("new-value").value = "{}";
    navigate(uiHref(path));
  } catch (e) {
    if (e instanceof ApiError && e.status === 412) e.message = "an item already exists at this path";
    await showSaveError(e, "new", $("new-ns").value.trim(), value);
  }
}

function startEdit() {
  // Edits are of the value as read without Schema-Version: show it again.
  if (state.itemShown) {
    state.itemShown = null;
    showItemValue();
  }
  // What a save diffs against and sends as If-Match, whatever is shown by then.
  state.editing = { version: state.item.version, value: structuredClone(state.item.value) };
  $("editor").value = pretty(state.item.value);
  $("editor-base").textContent = state.item.version;
  $("editor-form").hidden = false;
  $("conflict").hidden = true;
  $("saved").hidden = true;
  clearViolations("editor");
  $("editor").focus();
}

/** The key path of the item shown: its own, also when it was read through an alias (a write at
 * an alias path is refused: the item is written at its own). */
function ownPath() {
  return state.item ? state.item.path : state.path;
}

function itemUrl() {
  return "/v1/items/" + urlPath(ownPath()) + ($("keep-history").checked ? "?history=true" : "");
}

/** The item as stored now, or null when it is gone. */
async function currentItem() {
  const reply = await api("GET", "/v1/items/" + urlPath(ownPath()), { allow: [404] });
  return reply.status === 404 ? null : reply.json;
}

/** Shows the item a write answered, its history, and what the save did. */
async function saved(item, message) {
  state.item = item;
  state.editing = null;
  showItem();
  $("saved").textContent = message;
  $("saved").hidden = false;
  await loadHistory();
}

/**
 * Saves the editor. An object edited into an object goes as a merge patch of the members that
 * changed, with If-Match of the version "Edit" opened. On 412 it reads the item again: when
 * nobody else changed the members this patch sets (compared with the version opened), it sends
 * the same patch with If-Match of the version now stored, so it lands on top of the other
 * writes; when someone did, it shows the conflict. Anything else (not objects, or a member set to
 * null, which a merge patch reads as "remove") is a PUT of the whole value with If-Match.
 */
async function save(event) {
  if (event) event.preventDefault();
  clearError();
  clearViolations("editor");
  let mine;
  try {
    mine = parseJson($("editor").value);
  } catch (e) {
    showError(e);
    return;
  }
  const base = state.editing ?? { version: state.item.version, value: state.item.value };
  const patch = isObject(base.value) && isObject(mine) ? mergePatch(base.value, mine) : null;
  if (patch ? Object.keys(patch).length === 0 : sameJson(base.value, mine)) {
    state.editing = null;
    $("editor-form").hidden = true;
    $("conflict").hidden = true;
    $("saved").textContent = "No changes: nothing was written.";
    $("saved").hidden = false;
    return;
  }
  try {
    if (patch) await savePatch(patch, mine, base);
    else await putWhole(mine, base.version);
  } catch (e) {
    await showSaveError(e, "editor", namespaceOf(ownPath()), mine);
  }
}

async function savePatch(patch, mine, base) {
  const members = patchedMembers(patch, base.value, base.value).map((m) => m.path);
  let version = base.version;
  for (let attempt = 0; ; attempt++) {
    const reply = await api("PATCH", itemUrl(), {
      body: JSON.stringify(patch),
      headers: { "Content-Type": MERGE_PATCH, "If-Match": `"${version}"` },
      allow: [404, 412],
    });
    if (reply.status === 200) {
      const item = reply.json;
      await saved(
        item,
        version === base.version
          ? `Saved as version ${item.version}: a merge patch of ${members.join(", ")}.`
          : `Saved as version ${item.version}: your change to ${members.join(", ")} went on top of ` +
              `version ${version}, which someone else wrote after you opened version ${base.version} ` +
              `and which changed other members.`,
      );
      return;
    }
    // 412 (or 404): the item is no longer at `version`. What changed, and where?
    const theirs = await currentItem();
    const both = !theirs
      ? []
      : !isObject(theirs.value)
        ? ["the whole value"]
        : patchedMembers(patch, base.value, theirs.value).filter((m) => m.theirs).map((m) => m.path);
    if (!theirs || both.length || attempt + 1 >= MERGE_RETRIES) {
      showConflict(mine, base.version, theirs, both);
      return;
    }
    version = theirs.version;
  }
}

/** A PUT of the whole value with If-Match: the conflict when the item moved on. */
async function putWhole(mine, version) {
  const reply = await api("PUT", itemUrl(), {
    body: JSON.stringify(mine),
    headers: { "If-Match": `"${version}"` },
    allow: [412],
  });
  if (reply.status === 412) {
    showConflict(mine, version, await currentItem(), []);
    return;
  }
  await saved(reply.json, `Saved as version ${reply.json.version}: the whole value.`);
}

/** Both versions and their diff; `both` names the members that you and someone else changed. */
function showConflict(mine, base, theirs, both) {
  $("conflict-base").textContent = base;
  $("conflict-current").textContent = theirs ? theirs.version : "deleted";
  $("conflict-fields").textContent = both.length ? "Changed by you and by someone else: " + both.join(", ") : "";
  $("conflict-fields").hidden = both.length === 0;
  $("conflict-mine").textContent = pretty(mine);
  $("conflict-theirs").textContent = theirs ? pretty(theirs.value) : "(deleted)";
  renderDiff($("conflict-diff"), theirs ? pretty(theirs.value) : "", pretty(mine));
  $("conflict").hidden = false;
  $("conflict").dataset.current = theirs ? theirs.version : "";
}

/** "Overwrite with mine": the whole value as the editor holds it, over the stored version. */
async function overwrite() {
  const current = $("conflict").dataset.current;
  if (!current) {
    showError(new ApiError(0, "deleted", "the item was deleted; create it again"));
    return;
  }
  clearError();
  clearViolations("editor");
  let mine;
  try {
    mine = parseJson($("editor").value);
    await putWhole(mine, Number(current));
  } catch (e) {
    await showSaveError(e, "editor", namespaceOf(ownPath()), mine);
  }
}

async function discard() {
  await loadItem();
}

function askDelete() {
  $("confirm-path").textContent = ownPath();
  $("confirm-delete").showModal();
}

async function confirmDelete() {
  if ($("confirm-delete").returnValue !== "yes") return;
  clearError();
  try {
    await api("DELETE", "/v1/items/" + urlPath(ownPath()), {
      headers: { "If-Match": `"${state.item.version}"` },
    });
    await render();
  } catch (e) {
    if (e instanceof ApiError && e.status === 412) e.message = "the item changed since you opened it: " + e.message;
    showError(e);
  }
}

/** How many items lie at or below the open path, as words ("3 items", "more than 1000 items"). */
async function countSubtree() {
  const reply = await api("GET", "/v1/list/" + urlPath(state.path) + "?limit=1000");
  if (reply.json.next_page_token) return "more than 1000 items";
  const n = reply.json.items.length;
  return n === 1 ? "1 item" : `${n} items`;
}

/** Opens a subtree dialog once it says how many items the action touches. */
async function askWithCount(dialog, count) {
  clearError();
  try {
    $(count).textContent = await countSubtree();
    $(dialog).showModal();
  } catch (e) {
    showError(e);
  }
}

function askDeleteSubtree() {
  $("subtree-path").textContent = state.path;
  return askWithCount("confirm-delete-subtree", "subtree-count");
}

async function confirmDeleteSubtree() {
  if ($("confirm-delete-subtree").returnValue !== "yes") return;
  clearError();
  const path = state.path;
  try {
    const reply = await api("DELETE", "/v1/items/" + urlPath(path) + "?recursive=true");
    const n = reply.json.deleted;
    await go(parentHref(), `Deleted ${n} ${n === 1 ? "item" : "items"} at and below ${path}.`);
  } catch (e) {
    showError(e);
  }
}

function askMove() {
  $("move-from").textContent = state.path;
  $("move-to").value = state.path;
  return askWithCount("move-dialog", "move-count");
}

async function confirmMove() {
  if ($("move-dialog").returnValue !== "yes") return;
  clearError();
  const from = state.path;
  const to = $("move-to").value.trim();
  try {
    const reply = await api("POST", "/v1/move", { body: JSON.stringify({ from, to }) });
    const n = reply.json.moved;
    await go(uiHref(to), `Moved ${n} ${n === 1 ? "item" : "items"} from ${from} to ${to}.`);
  } catch (e) {
    showError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// Schema violations (a 422 `schema_violation`): each next to the member it names

/** The namespace of a key path: that of its last element (`/user-7/post-2` is a `post`). */
function namespaceOf(path) {
  return splitPath(path).pop().split("-")[0];
}

/** One token of a JSON Pointer (RFC 6901). */
function pointerToken(key) {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * Where each member and element of a JSON text is, by JSON Pointer: {from, to} spans a member's
 * name and scalar value (`"age": "x"`), or only its name when the value is an object or an array
 * (their members have spans of their own). Tolerant: for a text that is not JSON it returns what
 * it located before the trouble.
 */
function jsonSpans(text) {
  const spans = new Map();
  let i = 0;
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const nested = () => text[i] === "{" || text[i] === "[";
  const value = (pointer) => {
    space();
    const open = text[i];
    if (open === "{" || open === "[") {
      i++;
      space();
      if (text[i] === (open === "{" ? "}" : "]")) {
        i++;
        return;
      }
      for (let n = 0; i < text.length; n++) {
        space();
        const from = i;
        let member;
        let to;
        if (open === "{") {
          member = pointer + "/" + pointerToken(string());
          to = i;
          space();
          i++; // ':'
          space();
        } else {
          member = pointer + "/" + n;
          to = i + 1;
        }
        const scalar = !nested();
        value(member);
        spans.set(member, { from, to: scalar ? i : to });
        space();
        if (text[i++] !== ",") return; // the closing bracket
      }
    } else if (open === '"') {
      string();
    } else {
      while (i < text.length && !/[\s,\]}]/.test(text[i])) i++;
    }
  };
  try {
    value("");
  } catch {
    // Not JSON past this point: keep what was located.
  }
  return spans;
}

/** Marks the members named by `pointers` in the editor's text, behind the text itself. */
function markEditor(pointers) {
  const text = $("editor").value;
  const spans = jsonSpans(text);
  const ranges = [...new Set(pointers)]
    .map((p) => spans.get(p))
    .filter(Boolean)
    .sort((a, b) => a.from - b.from);
  const parts = [];
  let at = 0;
  for (const { from, to } of ranges) {
    if (from < at) continue;
    parts.push(text.slice(at, from));
    const mark = document.createElement("mark");
    mark.textContent = text.slice(from, to);
    parts.push(mark);
    at = to;
  }
  // A final newline makes a textarea one line taller: the same for the marks.
  parts.push(text.slice(at) + "\n");
  const marks = $("editor-marks");
  marks.replaceChildren(...parts);
  marks.hidden = ranges.length === 0;
  syncMarks();
  return spans;
}

/** The marks follow the editor's scrolling and, with its scrollbar, its text's width. */
function syncMarks() {
  const editor = $("editor");
  const marks = $("editor-marks");
  if (marks.hidden) return;
  const style = getComputedStyle(editor);
  const scrollbar = editor.offsetWidth - editor.clientWidth - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth);
  marks.style.paddingRight = `calc(${style.paddingRight} + ${scrollbar}px)`;
  marks.scrollTop = editor.scrollTop;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * A list of violations, one entry per instance path (the whole value first), each with its
 * messages and schema paths; `lineOf(pointer)` gives the editor line of a member, or null.
 */
function violationEntries(violations, lineOf = () => null) {
  const groups = new Map([["", []]]);
  for (const v of violations) {
    if (!groups.has(v.instance_path)) groups.set(v.instance_path, []);
    groups.get(v.instance_path).push(v);
  }
  const entries = [];
  for (const [pointer, list] of groups) {
    if (!list.length) continue;
    const li = el("li");
    li.dataset.pointer = pointer;
    li.append(pointer === "" ? el("strong", "member whole", "the whole value") : el("code", "member", pointer));
    const line = lineOf(pointer);
    if (line) {
      const go = el("button", "link line", `line ${line.number}`);
      go.type = "button";
      go.addEventListener("click", () => line.select());
      li.append(" ", go);
    }
    for (const v of list) {
      const row = el("div", "message", v.message);
      row.append(" ", el("span", "muted schema-path", `(schema ${v.schema_path || "/"})`));
      li.append(row);
    }
    entries.push(li);
  }
  return entries;
}

function clearViolations(where) {
  $(where + "-violations").hidden = true;
  $(where + "-violations-list").replaceChildren();
  if (where === "editor") {
    $("editor-marks").hidden = true;
    $("editor-marks").replaceChildren();
    state.marked = null;
  }
}

/**
 * A refused write: the violations of a 422 `schema_violation` beside the form, and an alias
 * refusal (`alias_taken`, `path_is_alias`, `alias_invalid`) with what it names; else the panel.
 * `ns` is the namespace written and `value` the value sent, to say which members an alias is
 * made of.
 */
async function showSaveError(error, where, ns = null, value = undefined) {
  if (error instanceof ApiError && ALIAS_REFUSALS.includes(error.code) && error.details) {
    await showAliasRefusal(error, where, ns, value);
    return;
  }
  if (!(error instanceof ApiError) || error.code !== "schema_violation" || !error.details) {
    showError(error);
    return;
  }
  const violations = error.details.violations || [];
  const path = error.details.path || state.path;
  const message = $(where + "-violations-message");
  message.replaceChildren("Not saved: ");
  if (path) {
    // A link to the definition that refused it.
    const ns = namespaceOf(path);
    const a = el("a", "", ns);
    a.href = nsHref(ns);
    message.append("the value does not fit the schema of ", a, violations.length ? "." : ": ");
  }
  // The server's message repeats the violations, which the list shows member by member.
  if (!violations.length || !path) message.append(error.message);
  let lineOf;
  if (where === "editor") {
    state.marked = violations.map((v) => v.instance_path).filter((p) => p !== "");
    const spans = markEditor(state.marked);
    const text = $("editor").value;
    lineOf = (pointer) => {
      const span = spans.get(pointer);
      if (!span || pointer === "") return null;
      return {
        number: text.slice(0, span.from).split("\n").length,
        select: () => {
          // Where the member is now, if the text changed since.
          const now = jsonSpans($("editor").value).get(pointer) || span;
          $("editor").focus();
          $("editor").setSelectionRange(now.from, now.to);
        },
      };
    };
  }
  $(where + "-violations-list").replaceChildren(...violationEntries(violations, lineOf));
  $(where + "-violations").hidden = false;
}

// ---------------------------------------------------------------------------------------------
// Alias paths (docs/aliases.md): more key paths for an item, filled from its value by the
// templates of its namespace's definition

/**
 * The alias that `template` gives the item at `itemPath` holding `value`, as the server fills it:
 * `{member}` a dotted path into the value (a string gives a string id, an integer an integer
 * id), `{!member}` the same as a descending id, `{@ns}` the id of the item path's (last) element
 * of namespace `ns`. null when it gives none: a member missing or null (or of a type no id is
 * made of), an element without an id, a string the key format refuses.
 */
function aliasPath(template, itemPath, value) {
  if (!template.startsWith("/")) return null;
  const elements = splitPath(itemPath);
  let out = "";
  for (const segment of splitPath(template)) {
    const dash = segment.indexOf("-");
    const filled = dash < 0 ? null : /^\{([\s\S]*)\}$/.exec(segment.slice(dash + 1));
    if (!filled) {
      out += "/" + segment; // a fixed element, as the template writes it
      continue;
    }
    const id = filledId(filled[1], elements, value);
    if (id === null) return null;
    out += "/" + segment.slice(0, dash) + "-" + id;
  }
  return out;
}

/** The id text of one `{...}` of a template (`source` is what the braces hold), or null. */
function filledId(source, elements, value) {
  if (source.startsWith("@")) {
    const ns = source.slice(1);
    for (let i = elements.length - 1; i >= 0; i--) {
      const dash = elements[i].indexOf("-");
      if ((dash < 0 ? elements[i] : elements[i].slice(0, dash)) === ns) return dash < 0 ? null : elements[i].slice(dash + 1);
    }
    return null;
  }
  const descending = source.startsWith("!");
  const member = memberOf(value, (descending ? source.slice(1) : source).split("."));
  const prefix = descending ? "!" : "";
  if (typeof member === "string") {
    // An empty string or a control character is no id: no alias (the server writes none).
    if (member === "" || /[\u0000-\u001f\u007f]/.test(member)) return null;
    return prefix + stringIdText(member);
  }
  // Past 2^53 JSON.parse has rounded the integer already: its alias cannot be told here.
  if (Number.isSafeInteger(member) && !Object.is(member, -0)) return prefix + String(member);
  return null;
}

/** The member of `value` that `names` lead to through objects, or undefined. */
function memberOf(value, names) {
  let at = value;
  for (const name of names) {
    if (!isObject(at) || !has(at, name)) return undefined;
    at = at[name];
  }
  return at;
}

/** The members a template fills its ids from (`{email}`, `{!points}`), not `{@ns}`. */
function templateMembers(template) {
  return [...template.matchAll(/\{!?([^}@][^}]*)\}/g)].map((m) => m[1]);
}

/** A dotted member (`address.city`) as a JSON Pointer (`/address/city`). */
function memberPointer(member) {
  return member.split(".").map((name) => "/" + pointerToken(name)).join("");
}

/** Whether `path` has the shape of `template`'s aliases: its fixed elements, and its filled
 * elements' namespaces. */
function templateShapes(template, path) {
  const parts = splitPath(template);
  const elements = splitPath(path);
  return (
    parts.length === elements.length &&
    parts.every((part, i) => {
      const dash = part.indexOf("-");
      const filled = dash >= 0 && /^\{[\s\S]*\}$/.test(part.slice(dash + 1));
      return filled ? elements[i].startsWith(part.slice(0, dash + 1)) : elements[i] === part;
    })
  );
}

/** The current templates of a definition (not those being removed), with their builds. */
function currentTemplates(def) {
  return (def?.aliases || []).filter((b) => b.state !== "removing");
}

function nsLink(name) {
  const a = el("a", "", name);
  a.href = nsHref(name);
  return a;
}

function pathLink(path, className = "path") {
  const a = el("a", className, path);
  a.href = uiHref(path);
  return a;
}

/** The item's aliases, as links, and the alias it was read through. */
function showItemAliases() {
  const item = state.item;
  const ns = namespaceOf(item.path);
  $("item-alias").hidden = !state.alias;
  if (state.alias) {
    $("item-alias-path").textContent = state.alias;
    $("item-alias-ns").textContent = ns;
    $("item-alias-ns").href = nsHref(ns);
    $("item-own-path").textContent = item.path;
    $("item-own-path").href = uiHref(item.path);
  }
  const rows = [];
  let readOne = false;
  for (const build of currentTemplates(state.itemDef)) {
    const alias = aliasPath(build.path, item.path, item.value);
    if (alias === null) continue;
    readOne ||= alias === state.alias;
    const li = el("li");
    li.dataset.template = build.path;
    const a = pathLink(alias);
    a.title = `From the template ${build.path} of ${ns}`;
    li.append(a);
    if (alias === state.alias) li.append(" ", el("span", "muted", "(read through it)"));
    // Reads through a template still building (or stopped) answer 503 until it is ready.
    if (build.state !== "ready") li.append(" ", stateBadge(build));
    rows.push(li);
  }
  $("item-aliases").replaceChildren(...rows);
  for (const e of document.querySelectorAll(".item-aliases")) e.hidden = rows.length === 0;
  // A save through the alias page changed the member it was made of.
  $("item-alias-gone").hidden = !state.alias || !state.itemDef || readOne;
}

/** A template's build state, as a small badge. */
function stateBadge(build) {
  const text =
    build.state === "building"
      ? `building: ${build.checked} checked`
      : build.state === "removing"
        ? `removing: ${build.written} removed`
        : build.state;
  return el("span", "alias-state state-" + build.state, text);
}

const ALIAS_REFUSALS = ["alias_taken", "path_is_alias", "alias_invalid"];

/** The definition of namespace `ns` (the item's, when it is the one shown), or null. */
async function definitionFor(ns) {
  if (state.itemDef && state.itemDef.namespace === ns) return state.itemDef;
  try {
    const reply = await api("GET", nsUrl(ns), { allow: [404] });
    return reply.status === 404 ? null : reply.json;
  } catch {
    return null;
  }
}

/**
 * A write refused for an alias, beside the form (`where`: "editor" or "new"): whose alias it is
 * (a link to the holder), which template and members made it; the members marked in the
 * editor. `ns` is the namespace written, `value` the value sent.
 */
async function showAliasRefusal(error, where, ns, value) {
  const d = error.details;
  const def = ns ? await definitionFor(ns) : null;
  const templates = currentTemplates(def).map((b) => b.path);
  let template = null;
  if (d.alias) template = templates.find((t) => templateShapes(t, d.alias)) ?? null;
  if (d.member) template = templates.find((t) => templateMembers(t).includes(d.member)) ?? null;
  const members = d.member ? [d.member] : template ? templateMembers(template) : [];
  const from = () => (template ? [" (the template ", el("code", "", template), " of ", nsLink(ns), ")"] : []);
  const message = $(where + "-violations-message");
  const verb = where === "new" ? "Not created: " : "Not saved: ";
  if (error.code === "alias_taken") {
    // "email ada@x.org is already used by /user-1"
    const said = members
      .map((m) => [m, memberOf(value, m.split("."))])
      .filter(([, v]) => typeof v === "string" || typeof v === "number")
      .map(([m, v]) => `${m} ${v}`);
    message.replaceChildren(
      verb,
      said.length ? said.join(", ") + " is already used by " : "the alias is already held by ",
      pathLink(d.holder, "path holder"),
      ": the alias ",
      pathLink(d.alias, "path alias"),
      ...from(),
      " belongs to one item. Change the value, or that item first.",
    );
  } else if (error.code === "path_is_alias") {
    message.replaceChildren(
      verb,
      el("code", "", d.path),
      " is an alias of ",
      pathLink(d.item, "path holder"),
      ": no item can be stored at an alias path; write the item at its own path.",
    );
  } else {
    // alias_invalid: "/user-4: member email is an array, but an alias id is a string or an integer"
    message.replaceChildren(verb, error.message.replace(/^\/\S*: /, ""), ...from(), ".");
  }
  $(where + "-violations-list").replaceChildren();
  if (where === "editor" && members.length) {
    state.marked = members.map(memberPointer);
    markEditor(state.marked);
  }
  $(where + "-violations").hidden = false;
}

const OPERATION_VERB = { read: "read", write: "write", admin: "administer" };

/** A 403 `forbidden` as a sentence: "This token may not write /team-8/doc-1." */
function forbiddenMessage(d) {
  const verb = OPERATION_VERB[d.operation] || d.operation || "do this with";
  const parts = d.path
    ? ["This token may not " + verb + " ", el("code", "", d.path), "."]
    : [`This token may not ${verb === "administer" ? "administer the database" : verb + " this"} (that needs admin on `, el("code", "", "/**"), ")."];
  const session = state.session;
  if (session && session.role && Array.isArray(session.rules)) {
    parts.push(` Its role ${session.role} allows `);
    if (!session.rules.length) parts.push("nothing.");
    session.rules.forEach((r, i) => {
      if (i) parts.push("; ");
      parts.push(...ruleLine(r, session.vars || {}).childNodes);
    });
    if (session.rules.length) parts.push(".");
  }
  return parts;
}

/** An error's message for the error panel: alias errors with links to what they name. */
function errorMessage(error) {
  const d = error instanceof ApiError ? error.details : null;
  if (error instanceof ApiError && error.code === "forbidden") return forbiddenMessage(d || {});
  if (!d) return [error.message];
  if (error.code === "alias_taken" && d.alias && d.holder)
    return ["the alias ", el("code", "", d.alias), " is already used by ", pathLink(d.holder), ": an alias belongs to one item"];
  if (error.code === "path_is_alias" && d.path && d.item)
    return [el("code", "", d.path), " is an alias of ", pathLink(d.item), ": write the item at its own path"];
  if (error.code === "alias_building" && d.template) {
    // "alias /email-{email} of namespace user is building: 3 items checked so far"
    const ns = /of namespace (\S+) is/.exec(error.message)?.[1];
    const what = d.state === "conflict" ? "stopped on a conflict" : "still being built";
    const parts = [`the alias template `, el("code", "", d.template), ` is ${what} (${d.checked ?? 0} items checked): reads through it answer once it is ready`];
    if (ns) parts.push("; its build: ", nsLink(ns));
    return parts;
  }
  return [error.message];
}

// ---------------------------------------------------------------------------------------------
// Namespace definitions: /ui/.namespaces (the list), /ui/.namespaces/{ns} (the editor) and
// /ui/.namespaces/{ns}/violations. No key path starts with '.', so these never shadow a node.

const NS_ROOT = "/ui/.namespaces";
// Pages of GET /v1/namespaces/{ns}/violations one "More" reads at most while they find nothing
// (a page reads a bounded number of records, so it may hold no item and still go on).
const VIOLATION_PAGES_PER_CLICK = 20;
// How often a page with alias builds under way reads their progress again.
const BUILD_POLL_MS = 1000;

/** {name, violations} when the URL is one of the namespace pages, else null. */
function namespaceRoute() {
  const m = /^\/ui\/\.namespaces(?:\/([^/]+)(\/violations)?)?\/?$/.exec(location.pathname);
  if (!m) return null;
  let name = null;
  if (m[1]) {
    try {
      name = decodeURIComponent(m[1]);
    } catch {
      name = m[1];
    }
  }
  return { name, violations: Boolean(m[2]) };
}

function nsHref(name, violations = false) {
  return NS_ROOT + "/" + encodeURIComponent(name) + (violations ? "/violations" : "");
}

function nsUrl(name) {
  return "/v1/namespaces/" + encodeURIComponent(name);
}

async function renderNamespaces(route) {
  const generation = ++state.generation;
  clearError();
  clearInterval(state.ttlTimer);
  state.path = null;
  state.item = null;
  state.editing = null;
  let show;
  let view;
  try {
    if (route.name === null) {
      view = "ns-list";
      state.nsPages = [null];
      state.nsPage = 0;
      show = await fetchNamespaceList();
    } else if (route.violations) {
      view = "ns-violations";
      show = await fetchViolations(route.name);
    } else {
      view = "ns-edit";
      show = await fetchDefinition(route.name);
    }
  } catch (e) {
    show = () => showError(e);
  }
  if (generation !== state.generation) return; // a later navigation owns the page now
  state.view = view;
  document.title = (route.name ? route.name + " · " : "") + "Namespaces · PathDB";
  $("crumbs").replaceChildren();
  $("main").hidden = true;
  $("access-page").hidden = true;
  $("backups-page").hidden = true;
  $("nav-access").removeAttribute("aria-current");
  $("nav-backups").removeAttribute("aria-current");
  $("notice").hidden = true;
  $("nav-namespaces").setAttribute("aria-current", "page");
  for (const id of ["ns-list-view", "ns-edit-view", "ns-violations-view"]) $(id).hidden = id !== view + "-view";
  $("ns-page").hidden = false;
  show();
  document.body.dataset.renderedAt = performance.now().toFixed(1);
}

/** One page of definitions; resolves to the function that shows it. */
async function fetchNamespaceList() {
  const params = new URLSearchParams({ limit: "100" });
  const token = state.nsPages[state.nsPage];
  if (token) params.set("page_token", token);
  const reply = await api("GET", "/v1/namespaces?" + params);
  return () => showNamespaceList(reply.json.namespaces, reply.json.next_page_token);
}

function showNamespaceList(definitions, next) {
  const fragment = document.createDocumentFragment();
  for (const d of definitions) {
    const tr = el("tr");
    tr.dataset.namespace = d.namespace;
    const name = el("td");
    const a = el("a", "path", d.namespace);
    a.href = nsHref(d.namespace);
    name.append(a);
    const violations = el("td");
    if (d.schema != null) {
      const v = el("a", "", "violations");
      v.href = nsHref(d.namespace, true);
      violations.append(v);
    }
    const aliases = el("td", "aliases");
    for (const build of d.aliases || []) {
      const line = el("div", "alias-summary");
      line.dataset.template = build.path;
      line.dataset.state = build.state;
      line.append(el("code", "", build.path), " ", stateBadge(build));
      aliases.append(line);
    }
    const cells = [
      name,
      el("td", "", String(d.version)),
      el("td", "", d.history == null ? "default" : `${d.history} revisions`),
      el("td", "", d.schema == null ? "no" : "yes"),
      aliases,
      el("td", "", d.description ?? ""),
      violations,
    ];
    // At a phone's width the rows are cards without the header: each cell says what it is.
    const labels = ["namespace", "version", "history", "schema", d.aliases?.length ? "aliases" : "", "", ""];
    labels.forEach((label, i) => label && (cells[i].dataset.label = label));
    tr.append(...cells);
    fragment.append(tr);
  }
  $("ns-rows").replaceChildren(fragment);
  $("ns-table").hidden = definitions.length === 0;
  $("ns-empty").hidden = definitions.length > 0;
  state.nsPages.length = state.nsPage + 1;
  if (next) state.nsPages.push(next);
  $("ns-prev").disabled = state.nsPage === 0;
  $("ns-next").disabled = !next;
  $("ns-page-info").textContent = definitions.length ? `page ${state.nsPage + 1} · ${definitions.length} shown` : "";
  // Builds under way: the page follows them.
  if (definitions.some((d) => buildsUnderWay(d.aliases))) {
    pollBuilds("ns-list", async () => (await fetchNamespaceList())());
  }
}

async function turnNamespacePage(delta) {
  const target = state.nsPage + delta;
  if (target < 0 || target >= state.nsPages.length) return;
  state.nsPage = target;
  clearError();
  try {
    (await fetchNamespaceList())();
  } catch (e) {
    showError(e);
  }
}

function openNewNamespace(event) {
  event.preventDefault();
  const name = $("ns-new-name").value.trim();
  $("ns-new-name").value = "";
  navigate(nsHref(name));
}

/** The definition (or its absence) and its kept versions; resolves to the function that shows
 * them in the editor. */
async function fetchDefinition(name) {
  const { def, versions } = await readDefinition(name);
  return () => {
    showDefinition(name, def);
    showVersions(name, versions, def ? def.rewrite : null);
  };
}

/** {def, versions}: the definition (null: none) with its rewrite, and the versions it keeps,
 * oldest first (none for a namespace never defined). */
async function readDefinition(name) {
  const [def, kept] = await Promise.all([
    api("GET", nsUrl(name), { allow: [404] }),
    api("GET", nsUrl(name) + "/versions", { allow: [404] }),
  ]);
  return { def: def.status === 404 ? null : def.json, versions: kept.status === 404 ? [] : kept.json.versions };
}

/** After a save: the versions again, with the new one and the rewrite it may have started. */
async function reloadVersions(name) {
  try {
    const { def, versions } = await readDefinition(name);
    if (state.view === "ns-edit" && state.ns && state.ns.name === name) showVersions(name, versions, def ? def.rewrite : null);
  } catch {
    // The definition shows already; its versions stay as they were.
  }
}

function showDefinition(name, def) {
  state.ns = { name, def };
  state.nsPending = null;
  state.nsForce = false;
  $("ns-name").textContent = name;
  $("ns-version").textContent = def ? def.version : "— (not defined)";
  $("ns-created").textContent = def ? when(def.created_at) : "—";
  $("ns-modified").textContent = def ? when(def.modified_at) : "—";
  $("ns-new-note").hidden = def !== null || !state.admin;
  $("ns-description").value = def?.description ?? "";
  $("ns-history").value = def?.history ?? "";
  $("ns-schema").value = def && def.schema != null ? pretty(def.schema) : "";
  $("ns-aliases-text").value = currentTemplates(def).map((b) => b.path).join("\n");
  // Steps belong to the version they lead to: a new version starts with none.
  $("ns-migrate").value = "";
  $("ns-formats").value = def?.formats ?? "";
  for (const id of ["ns-description", "ns-history", "ns-schema", "ns-aliases-text", "ns-migrate"]) $(id).readOnly = !state.admin;
  $("ns-formats").disabled = !state.admin;
  // Once off, the change log stays off (the server refuses a definition that turns it on).
  $("ns-no-changes").checked = def?.changes === false;
  $("ns-no-changes").disabled = !state.admin || def?.changes === false;
  showBuilds(name, def ? def.aliases : []);
  $("ns-violations-link").href = nsHref(name, true);
  $("ns-violations-link").parentElement.hidden = !def || def.schema == null;
  $("ns-delete").hidden = !def;
  $("ns-check").textContent = def ? "Check and save…" : "Check and create…";
  for (const id of ["ns-dry-run", "ns-conflict", "ns-saved", "ns-schema-error", "ns-aliases-error", "ns-migrate-error"]) $(id).hidden = true;
}

/** Whether an alias build or removal is under way (its progress moves on by itself). */
function buildsUnderWay(builds) {
  return (builds || []).some((b) => b.state === "building" || b.state === "removing");
}

/**
 * In BUILD_POLL_MS, reads again with `read` (which resolves to the function that shows what it
 * read) and shows it, unless the page changed meanwhile (a navigation bumps `state.poll`). What
 * it shows asks again while builds are under way; a failed read is tried again.
 */
function pollBuilds(view, read) {
  const poll = state.poll;
  clearTimeout(state.pollTimer);
  state.pollTimer = setTimeout(async () => {
    if (poll !== state.poll || state.view !== view) return;
    let show;
    try {
      show = await read();
    } catch {
      if (poll === state.poll) pollBuilds(view, read);
      return;
    }
    if (poll === state.poll && state.view === view) show();
  }, BUILD_POLL_MS);
}

/** The alias templates of the definition open in the editor, each with its build. */
function showBuilds(name, builds) {
  $("ns-aliases").hidden = builds.length === 0;
  $("ns-alias-builds").replaceChildren(...builds.map((b) => buildEntry(name, b)));
  if (buildsUnderWay(builds)) pollDefinition(name);
}

/**
 * Follows the definition open in the editor while its alias builds or its rewrite go on: reads
 * it again and shows only those (the form may hold edits of its own). One poll serves both: the
 * later call replaces the earlier one's timer with the same read.
 */
function pollDefinition(name) {
  pollBuilds("ns-edit", async () => {
    const reply = await api("GET", nsUrl(name), { allow: [404] });
    const def = reply.status === 404 ? null : reply.json;
    return () => {
      if (!state.ns || state.ns.name !== name) return;
      showBuilds(name, def ? def.aliases : []);
      showRewrite(name, def ? def.rewrite : null);
    };
  });
}

/** The versions a definition keeps, newest first: each with its time, the migration steps from
 * the version before and its schema; then where the rewrite of the stored items stands. */
function showVersions(name, versions, rewrite) {
  $("ns-versions").hidden = versions.length === 0;
  const newest = versions.length ? versions[versions.length - 1].version : null;
  $("ns-versions-header").textContent = `${name}=${versions.length ? versions[0].version : 1}`;
  $("ns-version-list").replaceChildren(...versions.map((v, i) => versionEntry(v, i === 0, v.version === newest)).reverse());
  showRewrite(name, rewrite);
}

function versionEntry(v, oldest, newest) {
  const li = el("li");
  li.dataset.version = v.version;
  const head = el("div", "version-head");
  head.append(el("strong", "", `version ${v.version}`), " ", el("span", "muted", when(v.modified_at)));
  if (newest) head.append(" ", el("span", "alias-state state-ready", "current"));
  li.append(head);
  const steps = v.migrate || [];
  if (steps.length) {
    li.append(el("p", "muted step-intro", `From version ${v.version - 1}, ${plural(steps.length, "step")}:`));
    const list = el("ul", "steps");
    list.append(...steps.map(stepEntry));
    li.append(list);
  } else {
    const text = oldest && v.version === 1
      ? "The first version."
      : oldest
        ? "The oldest version kept."
        : `No migration steps: values read as in version ${v.version - 1}.`;
    li.append(el("p", "muted step-intro", text));
  }
  const schema = el("details", "version-schema");
  schema.append(el("summary", "", v.schema == null ? "schema: none (any value)" : "schema"));
  if (v.schema != null) schema.append(el("pre", "json", pretty(v.schema)));
  li.append(schema);
  return li;
}

/** A migration step as a person reads it: "rename /name → /full_name". */
function stepEntry(step) {
  const li = el("li");
  li.dataset.op = step.op;
  const code = (text) => el("code", "", text);
  const json = (value) => code(JSON.stringify(value));
  if (step.op === "rename") li.append("rename ", code(step.from), " → ", code(step.to));
  else if (step.op === "add") li.append("add ", code(step.path), " (older values get ", json(step.default), ")");
  else if (step.op === "remove") {
    li.append("remove ", code(step.path));
    if (has(step, "read_default")) li.append(" (older versions read ", json(step.read_default), ")");
  } else if (step.op === "rename_value") li.append("rename the value ", json(step.from), " → ", json(step.to), " at ", code(step.path));
  else li.append(json(step)); // a step this console does not know, as the server says it
  return li;
}

/** Where the background rewrite of the stored items to the newest version stands. */
function showRewrite(name, rewrite) {
  $("ns-rewrite").hidden = !rewrite;
  if (!rewrite) return;
  const { to, checked, rewritten, done } = rewrite;
  $("ns-rewrite").dataset.to = to;
  $("ns-rewrite").dataset.state = done ? "done" : "running";
  const counts = `${plural(rewritten, "item")} rewritten of ${checked.toLocaleString("en-US")} checked`;
  $("ns-rewrite-text").replaceChildren(
    el("strong", "", `Rewrite to version ${to}: ${done ? "done" : "running"}`),
    done ? ` (${counts}: every stored item was read).` : ` (${counts} so far). Reads translate the items not yet rewritten.`,
  );
  $("ns-rewrite-bar").hidden = done;
  if (!done) pollDefinition(name);
}

function buildEntry(name, build) {
  const li = el("li");
  li.dataset.template = build.path;
  li.dataset.state = build.state;
  li.dataset.checked = build.checked;
  const head = el("div", "alias-head");
  head.append(el("code", "template", build.path), " ", stateBadge(build));
  li.append(head);
  const n = (count, one, many) => `${count} ${count === 1 ? one : many}`;
  const counts = `${n(build.checked, "item", "items")} checked, ${n(build.written, "alias", "aliases")} written`;
  if (build.state === "building" || build.state === "removing") {
    // The build reads the whole database and knows no total: the bar says it is moving, the
    // counts how far it got.
    const bar = el("progress");
    bar.setAttribute("aria-label", `${build.state} ${build.path}`);
    li.append(bar);
  }
  const text = {
    ready: `Ready: ${counts}.`,
    building: `Building over the stored items: ${counts} so far. Writes keep its aliases already; reads through them answer once it is ready.`,
    conflict: `Stopped: ${n((build.conflicts || []).length, "alias", "aliases")} would name more than one item, and an alias belongs to one. Change those items, then retry (the build starts again from the beginning).`,
    removing: `Removed from the definition: ${n(build.written, "alias", "aliases")} deleted so far.`,
  }[build.state];
  li.append(el("p", "muted build-text", text ?? `${build.state}: ${counts}`));
  if (build.state === "conflict") {
    const list = el("ul", "alias-conflicts");
    for (const c of build.conflicts || []) {
      const item = el("li");
      item.dataset.alias = c.alias;
      item.append(el("code", "", c.alias), " would name ");
      c.items.forEach((path, i) => item.append(...(i ? [", "] : []), pathLink(path)));
      list.append(item);
    }
    const retry = el("button", "retry admin", "Retry");
    retry.type = "button";
    retry.addEventListener("click", () => retryBuild(name, build.path, retry));
    li.append(list, retry);
  }
  return li;
}

/** Starts a build stopped on a conflict again (POST …/aliases/retry), and follows it. */
async function retryBuild(name, template, button) {
  clearError();
  button.disabled = true;
  try {
    const reply = await api("POST", nsUrl(name) + "/aliases/retry", { body: JSON.stringify({ path: template }) });
    if (state.view === "ns-edit" && state.ns && state.ns.name === name) showBuilds(name, reply.json.aliases);
  } catch (e) {
    button.disabled = false;
    showError(e);
  }
}

function showMigrateError(message) {
  $("ns-migrate-error").textContent = message;
  $("ns-migrate-error").hidden = false;
}

function showSchemaError(message) {
  $("ns-schema-error").textContent = message;
  $("ns-schema-error").hidden = false;
}

/** The PUT body the editor holds; throws with a message for what is not JSON or not a schema. */
function definitionBody() {
  const body = {};
  const text = $("ns-schema").value.trim();
  if (text) {
    let schema;
    try {
      schema = JSON.parse(text);
    } catch (e) {
      throw new Error("Not saved: the schema is not JSON: " + e.message);
    }
    if (typeof schema !== "boolean" && !isObject(schema))
      throw new Error("Not saved: a JSON Schema is an object or a boolean, not " + (Array.isArray(schema) ? "an array" : JSON.stringify(schema)));
    body.schema = schema;
  }
  const history = $("ns-history").value.trim();
  if (history && !/^[1-9][0-9]*$/.test(history)) throw new Error("Not saved: history is a number of revisions, 1 or more");
  body.history = history ? Number(history) : null;
  const description = $("ns-description").value.trim();
  body.description = description || null;
  // Always sent: a definition without `aliases` has none (its templates would be removed).
  body.aliases = $("ns-aliases-text")
    .value.split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((path) => ({ path }));
  const steps = $("ns-migrate").value.trim();
  if (steps) {
    let migrate;
    try {
      migrate = JSON.parse(steps);
    } catch (e) {
      throw new MigrateError("Not saved: the migration steps are not JSON: " + e.message);
    }
    if (!Array.isArray(migrate) || !migrate.every(isObject))
      throw new MigrateError('Not saved: the migration steps are a JSON array of steps such as {"op": "rename", "from": "/a", "to": "/b"}');
    if (migrate.length > 0) body.migrate = migrate;
  }
  if ($("ns-formats").value) body.formats = $("ns-formats").value;
  if ($("ns-no-changes").checked) body.changes = false;
  return body;
}

/** What is wrong with the migration steps the editor holds (shown beside them). */
class MigrateError extends Error {}

/** A refused definition: what is wrong with its templates beside them, the schema's beside it,
 * anything else in the panel. */
function showDefinitionError(e) {
  if (e instanceof ApiError && e.code === "invalid_schema") {
    showSchemaError("Not saved: the schema is invalid: " + e.message);
  } else if (e instanceof ApiError && e.code === "incompatible_schema") {
    // Saved without a dry run's word (someone changed the definition between): say what breaks.
    showProblems(e.details?.problems || [e.message]);
    $("ns-dry-run").hidden = false;
  } else if (e instanceof ApiError && e.code === "invalid_request" && /\b(migration|step)/.test(e.message)) {
    showMigrateError("Not saved: " + e.message.replace(/^invalid request: /, ""));
  } else if (e instanceof ApiError && e.code === "invalid_request" && /\balias/.test(e.message)) {
    $("ns-aliases-error").textContent = "Not saved: " + e.message.replace(/^invalid request: /, "");
    $("ns-aliases-error").hidden = false;
  } else {
    showError(e);
  }
}

/**
 * "Check and save": refuses what is not JSON here, then asks the server what the new schema
 * says about the stored items (PUT ?dry_run=true, nothing stored). An invalid schema stops
 * there; otherwise the count and the first violating items, and "Save" to confirm.
 */
async function checkNamespace(event) {
  event.preventDefault();
  if (!state.admin) return; // (Enter in a read-only field)
  clearError();
  for (const id of ["ns-dry-run", "ns-conflict", "ns-saved", "ns-schema-error", "ns-aliases-error", "ns-migrate-error"]) $(id).hidden = true;
  let body;
  try {
    body = definitionBody();
  } catch (e) {
    if (e instanceof MigrateError) showMigrateError(e.message);
    else showSchemaError(e.message);
    return;
  }
  const name = state.ns.name;
  $("ns-check").disabled = true;
  try {
    const reply = await api("PUT", nsUrl(name) + "?dry_run=true", { body: JSON.stringify(body) });
    if (state.view !== "ns-edit" || state.ns.name !== name) return;
    showDryRun(reply.json, body);
  } catch (e) {
    showDefinitionError(e);
  } finally {
    $("ns-check").disabled = false;
  }
}

function showDryRun(result, body) {
  state.nsPending = body;
  const { checked, violating } = result;
  const first = result.first || [];
  let summary = `${violating} of ${checked} stored ${checked === 1 ? "item" : "items"} would violate this schema.`;
  if (body.schema === undefined) summary = `No schema: no value is refused (${checked} stored ${checked === 1 ? "item" : "items"} read).`;
  else if (violating > first.length) summary += ` The first ${first.length}:`;
  $("ns-dry-run-summary").textContent = summary;
  $("ns-dry-run-first").replaceChildren(...first.map(violatingItem));
  // What saving does to the aliases: a template added is built over the stored items, one
  // removed has its aliases deleted.
  const before = currentTemplates(state.ns.def).map((b) => b.path);
  const after = body.aliases.map((a) => a.path);
  const changes = [
    ...after
      .filter((t) => !before.includes(t))
      .map((t) => ["Adds ", el("code", "", t), ": once saved, its aliases are built over the stored items (two items with the same alias stop the build; it lists them)."]),
    ...before.filter((t) => !after.includes(t)).map((t) => ["Removes ", el("code", "", t), ": its aliases are deleted."]),
  ].map((parts) => {
    const li = el("li");
    li.append(...parts);
    return li;
  });
  $("ns-dry-run-aliases").replaceChildren(...changes);
  $("ns-dry-run-aliases").hidden = changes.length === 0;
  showProblems(result.problems || []);
  $("ns-dry-run").hidden = false;
  $("ns-save").focus();
}

/**
 * What the new version breaks for clients of the current one (a dry run's `problems`, or a 409
 * `incompatible_schema`): listed, and "Save" becomes "Save anyway", which forces it.
 */
function showProblems(problems) {
  state.nsForce = problems.length > 0;
  $("ns-dry-run-problem-list").replaceChildren(...problems.map((p) => el("li", "", p)));
  $("ns-dry-run-problems").hidden = problems.length === 0;
  const def = state.ns.def;
  const save = def ? `Save as version ${def.version + 1}` : "Create the definition";
  $("ns-save").textContent = state.nsForce ? `${save} anyway` : save;
}

/** An item that a schema refuses: its path (a link to it) and its violations. */
function violatingItem(item) {
  const li = el("li");
  li.dataset.path = item.path;
  const a = el("a", "path", item.path);
  a.href = uiHref(item.path);
  li.append(a);
  if (item.version != null) li.append(" ", el("span", "muted", `version ${item.version}`));
  const list = el("ul", "violations");
  list.append(...violationEntries(item.violations || []));
  li.append(list);
  return li;
}

/** "Save" after a dry run: PUT with If-Match of the version opened (If-None-Match: * for new). */
async function saveNamespace(version = state.ns.def ? state.ns.def.version : null) {
  const name = state.ns.name;
  const body = state.nsPending;
  clearError();
  $("ns-save").disabled = true;
  try {
    const reply = await api("PUT", nsUrl(name) + (state.nsForce ? "?force=true" : ""), {
      body: JSON.stringify(body),
      headers: version === null ? { "If-None-Match": "*" } : { "If-Match": `"${version}"` },
      allow: [412],
    });
    if (reply.status === 412) {
      await showNamespaceConflict(body, version);
      return;
    }
    showDefinition(name, reply.json);
    reloadVersions(name);
    $("ns-saved").textContent =
      (reply.status === 201 ? "Created" : "Saved") + ` as version ${reply.json.version}: every write into ${name} is checked from now on.`;
    $("ns-saved").hidden = false;
  } catch (e) {
    $("ns-dry-run").hidden = true;
    showDefinitionError(e);
  } finally {
    $("ns-save").disabled = false;
  }
}

/** The body of a definition as a PUT would send it, to compare with the editor's. */
function definitionAsBody(def) {
  if (!def) return null;
  const body = {};
  if (def.schema != null) body.schema = def.schema;
  body.history = def.history ?? null;
  body.description = def.description ?? null;
  body.aliases = currentTemplates(def).map((b) => ({ path: b.path }));
  if (def.formats != null) body.formats = def.formats;
  if (def.changes === false) body.changes = false;
  return body;
}

/** A 412: someone else created, changed or deleted the definition since it was opened. */
async function showNamespaceConflict(mine, version) {
  const reply = await api("GET", nsUrl(state.ns.name), { allow: [404] });
  const theirs = reply.status === 404 ? null : reply.json;
  $("ns-dry-run").hidden = true;
  const opened = version === null ? "you opened it (not defined then)" : `you opened version ${version}`;
  $("ns-conflict-text").textContent = theirs
    ? `Someone else saved version ${theirs.version} (${when(theirs.modified_at)}) after ${opened}. Nothing was saved. ` +
      `The diff below goes from theirs to yours.`
    : `Someone else deleted it after ${opened}. Nothing was saved.`;
  renderDiff($("ns-conflict-diff"), theirs ? pretty(definitionAsBody(theirs)) : "", pretty(mine));
  $("ns-conflict").dataset.current = theirs ? theirs.version : "";
  $("ns-conflict").hidden = false;
}

async function overwriteNamespace() {
  const current = $("ns-conflict").dataset.current;
  $("ns-conflict").hidden = true;
  await saveNamespace(current ? Number(current) : null);
}

async function reloadDefinition() {
  clearError();
  try {
    (await fetchDefinition(state.ns.name))();
  } catch (e) {
    showError(e);
  }
}

function askDeleteNamespace() {
  $("ns-delete-name").textContent = state.ns.name;
  $("confirm-ns-delete").showModal();
}

async function confirmDeleteNamespace() {
  if ($("confirm-ns-delete").returnValue !== "yes") return;
  clearError();
  const { name, def } = state.ns;
  try {
    await api("DELETE", nsUrl(name), { headers: { "If-Match": `"${def.version}"` } });
    await go(NS_ROOT, `Deleted the definition of ${name}; its items stay.`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 412) e.message = "the definition changed since you opened it: " + e.message;
    showError(e);
  }
}

/** The first violations of a namespace's schema; resolves to the function that shows them. */
async function fetchViolations(name) {
  const viol = { name, token: null, checked: 0, found: [], done: false };
  await scanViolations(viol);
  return () => showViolations(viol, viol.found);
}

/** Reads pages of violations until one holds an item or the scan ends (or after a few pages). */
async function scanViolations(viol) {
  const found = [];
  for (let pages = 0; pages < VIOLATION_PAGES_PER_CLICK && !found.length; pages++) {
    const params = new URLSearchParams({ limit: "50" });
    if (viol.token) params.set("page_token", viol.token);
    const reply = await api("GET", nsUrl(viol.name) + "/violations?" + params);
    viol.checked += reply.json.checked || 0;
    found.push(...reply.json.items);
    viol.token = reply.json.next_page_token;
    if (!viol.token) {
      viol.done = true;
      break;
    }
  }
  viol.found = found;
  return found;
}

function showViolations(viol, added, append = false) {
  state.viol = viol;
  $("viol-ns").textContent = viol.name;
  $("viol-ns").href = nsHref(viol.name);
  const fragment = document.createDocumentFragment();
  fragment.append(...added.map(violatingItem));
  if (append) $("viol-items").append(fragment);
  else $("viol-items").replaceChildren(fragment);
  const shown = $("viol-items").children.length;
  const items = (n) => `${n} stored ${n === 1 ? "item" : "items"}`;
  $("viol-summary").textContent = viol.done
    ? `${items(shown)} of ${viol.checked} violate the schema of ${viol.name}.`
    : `${items(shown)} of the ${viol.checked} read so far violate the schema of ${viol.name}; "More" reads on.`;
  $("viol-more").disabled = viol.done;
}

async function moreViolations() {
  const viol = state.viol;
  clearError();
  $("viol-more").disabled = true;
  try {
    const found = await scanViolations(viol);
    if (state.viol === viol && state.view === "ns-violations") showViolations(viol, found, true);
  } catch (e) {
    $("viol-more").disabled = false;
    showError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// Roles & tokens: /ui/.access (GET/PUT/DELETE /v1/roles, GET/POST/DELETE /v1/tokens), for a
// session that may administer. Secrets exist only in the answer of POST /v1/tokens.

const ACCESS_ROOT = "/ui/.access";
const OPERATIONS = ["read", "write", "admin"];

function accessRoute() {
  return /^\/ui\/\.access\/?$/.test(location.pathname);
}

function roleUrl(name) {
  return "/v1/roles/" + encodeURIComponent(name);
}

async function renderAccess() {
  const generation = ++state.generation;
  clearError();
  clearInterval(state.ttlTimer);
  state.path = null;
  state.item = null;
  state.editing = null;
  let show;
  let loaded = true;
  try {
    show = await fetchAccess();
  } catch (e) {
    loaded = false;
    show = () => showError(e);
  }
  if (generation !== state.generation) return; // a later navigation owns the page now
  state.view = "access";
  $("access-panels").hidden = !loaded;
  $("access-denied").hidden = loaded || !(show && state.session && !state.admin);
  document.title = "Roles & tokens · PathDB";
  $("crumbs").replaceChildren();
  $("main").hidden = true;
  $("ns-page").hidden = true;
  $("backups-page").hidden = true;
  $("notice").hidden = true;
  $("nav-namespaces").removeAttribute("aria-current");
  $("nav-backups").removeAttribute("aria-current");
  $("nav-access").setAttribute("aria-current", "page");
  $("role-form").hidden = true;
  $("token-created").hidden = true;
  $("access-page").hidden = false;
  show();
  document.body.dataset.renderedAt = performance.now().toFixed(1);
}

/** The roles and the tokens; resolves to the function that shows them. */
async function fetchAccess() {
  const [roles, tokens] = await Promise.all([api("GET", "/v1/roles"), api("GET", "/v1/tokens")]);
  return () => {
    showRoles(roles.json.roles);
    showTokens(tokens.json.tokens);
  };
}

async function reloadAccess() {
  try {
    (await fetchAccess())();
  } catch (e) {
    showError(e);
  }
}

function showRoles(roles) {
  state.roles = roles;
  $("role-rows").replaceChildren(
    ...roles.map((role) => {
      const tr = el("tr");
      tr.dataset.role = role.name;
      const name = el("td", "path");
      name.append(role.name);
      if (role.builtin) name.append(" ", el("span", "builtin", "built in"));
      const rules = el("td");
      const list = el("ul", "rules");
      list.append(...role.rules.map((r) => ruleLine(r)));
      rules.append(role.rules.length ? list : el("span", "muted", "no rules: allows nothing"));
      const actions = el("td", "row-actions");
      if (!role.builtin) {
        const edit = el("button", "edit-role", "Edit");
        edit.type = "button";
        edit.addEventListener("click", () => openRole(role.name));
        const del = el("button", "danger delete-role", "Delete…");
        del.type = "button";
        del.addEventListener("click", () => askDeleteRole(role));
        actions.append(edit, " ", del);
      }
      tr.append(name, rules, el("td", "", role.description ?? ""), el("td", "", role.builtin ? "—" : String(role.version)), actions);
      return tr;
    }),
  );
  // The token form's roles, keeping the choice.
  const select = $("token-role");
  const chosen = select.value;
  select.replaceChildren(...roles.map((r) => el("option", "", r.name)));
  if (roles.some((r) => r.name === chosen)) select.value = chosen;
  else select.value = roles.find((r) => !r.builtin)?.name ?? roles[0]?.name ?? "";
  fillVarNames();
}

// The role editor ------------------------------------------------------------------------------

function ruleRow(rule = { path: "", allow: ["read"] }) {
  const tr = el("tr", "rule-row");
  const path = el("input", "rule-path");
  path.value = rule.path;
  path.required = true;
  path.spellcheck = false;
  path.placeholder = "/team-{team}/**";
  path.setAttribute("aria-label", "path template");
  const cells = [el("td", "grow")];
  cells[0].append(path);
  for (const op of OPERATIONS) {
    const td = el("td");
    const box = el("input", "allow-" + op);
    box.type = "checkbox";
    box.checked = (rule.allow || []).includes(op);
    box.setAttribute("aria-label", op);
    td.append(box);
    cells.push(td);
  }
  const remove = el("button", "link remove-rule", "remove");
  remove.type = "button";
  remove.addEventListener("click", () => tr.remove());
  const last = el("td");
  last.append(remove);
  cells.push(last);
  tr.append(...cells);
  return tr;
}

function showRoleForm(role) {
  state.role = role ? { name: role.name, version: role.version } : { name: null, version: null };
  $("role-form-title").textContent = role ? `Edit role ${role.name} (version ${role.version})` : "New role";
  $("role-name").value = role ? role.name : "";
  $("role-name").readOnly = Boolean(role);
  $("role-description").value = role?.description ?? "";
  $("rule-rows").replaceChildren(...(role ? role.rules : [{ path: "", allow: ["read"] }]).map((r) => ruleRow(r)));
  $("role-error").hidden = true;
  $("role-form").hidden = false;
  (role ? $("role-description") : $("role-name")).focus();
}

/** Opens a stored role in the editor, as read now: its version is what the save's If-Match holds. */
async function openRole(name) {
  clearError();
  try {
    const reply = await api("GET", roleUrl(name));
    showRoleForm(reply.json);
  } catch (e) {
    showError(e);
  }
}

function roleBody() {
  const rules = [...$("rule-rows").querySelectorAll("tr")].map((tr) => ({
    path: tr.querySelector(".rule-path").value.trim(),
    allow: OPERATIONS.filter((op) => tr.querySelector(".allow-" + op).checked),
  }));
  const body = { rules };
  const description = $("role-description").value.trim();
  if (description) body.description = description;
  return body;
}

function showRoleError(parts, reload = false) {
  $("role-error-message").replaceChildren(...parts);
  $("role-reload").hidden = !reload;
  $("role-error").hidden = false;
}

async function saveRole(event) {
  event.preventDefault();
  clearError();
  $("role-error").hidden = true;
  for (const tr of $("rule-rows").querySelectorAll("tr")) tr.classList.remove("bad");
  const name = state.role.name ?? $("role-name").value.trim();
  const version = state.role.version;
  const isNew = state.role.name === null;
  $("role-save").disabled = true;
  try {
    const reply = await api("PUT", roleUrl(name), {
      body: JSON.stringify(roleBody()),
      headers: isNew ? { "If-None-Match": "*" } : { "If-Match": `"${version}"` },
    });
    $("role-form").hidden = true;
    await reloadAccess();
    $("notice").textContent = `${reply.status === 201 ? "Created" : "Saved"} role ${name} (version ${reply.json.version}).`;
    $("notice").hidden = false;
  } catch (e) {
    if (!(e instanceof ApiError)) showError(e);
    else if (e.status === 412) {
      showRoleError(
        isNew
          ? [`Not saved: a role named ${name} exists already; nothing was changed. Edit it from the list instead.`]
          : [`Not saved: someone else changed or deleted role ${name} after you opened version ${version}. Nothing was changed; reload it to see theirs.`],
        !isNew,
      );
    } else if (e.status === 422 || e.code === "builtin_role") {
      // `invalid_role` names the rule: mark its row.
      const named = /rule (?:path )?"([^"]*)"/.exec(e.message)?.[1];
      for (const tr of $("rule-rows").querySelectorAll("tr"))
        if (named !== undefined && tr.querySelector(".rule-path").value.trim() === named) tr.classList.add("bad");
      showRoleError(["Not saved: " + e.message]);
    } else if (e.code === "forbidden" || e.status === 401) {
      showError(e);
    } else {
      showRoleError(["Not saved: " + e.message]);
    }
  } finally {
    $("role-save").disabled = false;
  }
}

function askDeleteRole(role) {
  state.deleting = { name: role.name, version: role.version };
  $("role-delete-name").textContent = role.name;
  $("confirm-role-delete").showModal();
}

async function confirmDeleteRole() {
  if ($("confirm-role-delete").returnValue !== "yes") return;
  clearError();
  const { name, version } = state.deleting;
  try {
    await api("DELETE", roleUrl(name), { headers: { "If-Match": `"${version}"` } });
    if (state.role?.name === name) $("role-form").hidden = true;
    await reloadAccess();
    $("notice").textContent = `Deleted role ${name}.`;
    $("notice").hidden = false;
  } catch (e) {
    if (e instanceof ApiError && e.status === 412)
      e.message = `role ${name} changed since the list was read (it showed version ${version}); nothing was deleted: ` + e.message;
    showError(e);
    await reloadAccess();
  }
}

// Tokens ---------------------------------------------------------------------------------------

function varsText(vars) {
  const names = Object.keys(vars || {});
  return names.length ? names.map((n) => `${n} = ${varText(vars[n])}`).join(", ") : "—";
}

function showTokens(tokens) {
  $("token-rows").replaceChildren(
    ...tokens.map((t) => {
      const tr = el("tr");
      tr.dataset.token = t.id;
      const revoke = el("button", "danger revoke", "Revoke…");
      revoke.type = "button";
      revoke.addEventListener("click", () => askRevoke(t));
      const actions = el("td");
      actions.append(revoke);
      const cells = [
        el("td", "path", t.id),
        el("td", "", t.role),
        el("td", "vars", varsText(t.vars)),
        el("td", "", t.description ?? ""),
        el("td", "time", when(t.created_at)),
        el("td", "time", t.expires_at == null ? "never" : when(t.expires_at)),
        el("td", "time", t.last_used_at == null ? "never" : when(t.last_used_at)),
        actions,
      ];
      ["id", "role", "vars", "", "created", "expires", "last used", ""].forEach((label, i) => label && (cells[i].dataset.label = label));
      tr.append(...cells);
      return tr;
    }),
  );
  $("token-table").hidden = tokens.length === 0;
  $("token-empty").hidden = tokens.length > 0;
}

function varRow(name = "", value = "") {
  const row = el("div", "row var-row");
  const key = el("input", "var-name");
  key.value = name;
  key.placeholder = "name";
  key.spellcheck = false;
  key.setAttribute("aria-label", "var name");
  const val = el("input", "var-value");
  val.value = value;
  val.placeholder = "value";
  val.spellcheck = false;
  val.setAttribute("aria-label", "var value");
  const remove = el("button", "link", "remove");
  remove.type = "button";
  remove.addEventListener("click", () => row.remove());
  row.append(key, el("span", "muted", "="), val, remove);
  return row;
}

/** A row for each `{name}` of the chosen role's templates that has none yet. */
function fillVarNames() {
  const role = state.roles.find((r) => r.name === $("token-role").value);
  const rows = $("var-rows");
  // Rows left empty belong to the previous role: gone.
  for (const row of [...rows.children]) if (!row.querySelector(".var-value").value.trim()) row.remove();
  const present = new Set([...rows.querySelectorAll(".var-name")].map((i) => i.value.trim()));
  for (const name of new Set((role?.rules || []).flatMap((r) => templateVars(r.path))))
    if (!present.has(name)) rows.append(varRow(name));
}

/** The vars of the form: whole numbers as JSON numbers, anything else as a string. */
function tokenVars() {
  const vars = {};
  for (const row of $("var-rows").children) {
    const name = row.querySelector(".var-name").value.trim();
    const text = row.querySelector(".var-value").value.trim();
    if (!name && !text) continue;
    if (!name) throw new Error(`the var with value "${text}" has no name`);
    if (has(vars, name)) throw new Error(`the var ${name} is given twice`);
    const n = Number(text);
    vars[name] = /^-?[0-9]+$/.test(text) && Number.isSafeInteger(n) ? n : text;
  }
  return vars;
}

function showTokenError(message) {
  $("token-error").textContent = message;
  $("token-error").hidden = false;
}

async function createToken(event) {
  event.preventDefault();
  clearError();
  $("token-error").hidden = true;
  const body = { role: $("token-role").value };
  try {
    body.vars = tokenVars();
  } catch (e) {
    showTokenError("Not created: " + e.message);
    return;
  }
  const expires = $("token-expires").value;
  if (expires) {
    const at = new Date(expires).getTime();
    if (!Number.isFinite(at)) return showTokenError("Not created: the expiry is not a date and time");
    body.expires_at = at * 1000;
  } else body.expires_at = null;
  const description = $("token-description").value.trim();
  if (description) body.description = description;
  $("token-create").disabled = true;
  try {
    const reply = await api("POST", "/v1/tokens", { body: JSON.stringify(body) });
    $("token-secret").textContent = reply.json.token;
    $("token-copied").hidden = true;
    $("token-created").hidden = false;
    for (const id of ["token-expires", "token-description"]) $(id).value = "";
    $("var-rows").replaceChildren();
    fillVarNames();
    await reloadAccess();
    $("token-created").scrollIntoView({ block: "nearest" });
  } catch (e) {
    if (e instanceof ApiError && (e.status === 400 || e.status === 422)) showTokenError("Not created: " + e.message);
    else showError(e);
  } finally {
    $("token-create").disabled = false;
  }
}

async function copySecret() {
  const text = $("token-secret").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (an insecure origin): select the text and copy it the old way.
    const range = document.createRange();
    range.selectNodeContents($("token-secret"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    document.execCommand("copy");
  }
  $("token-copied").hidden = false;
}

/** "Done": the secret leaves the page for good. */
function forgetSecret() {
  $("token-secret").textContent = "";
  $("token-created").hidden = true;
}

function askRevoke(token) {
  state.revoking = token.id;
  $("token-revoke-id").textContent = token.id;
  $("token-revoke-what").textContent = `role ${token.role}` + (Object.keys(token.vars || {}).length ? `, ${varsText(token.vars)}` : "");
  $("confirm-token-revoke").showModal();
}

async function confirmRevoke() {
  if ($("confirm-token-revoke").returnValue !== "yes") return;
  clearError();
  const id = state.revoking;
  try {
    await api("DELETE", "/v1/tokens/" + encodeURIComponent(id));
    await reloadAccess();
    $("notice").textContent = `Revoked token ${id}: it is refused from now on.`;
    $("notice").hidden = false;
  } catch (e) {
    showError(e);
  }
}

function initAccess() {
  // The session's panel closes on a click anywhere else.
  document.addEventListener("click", (event) => {
    if ($("session").open && !$("session").contains(event.target)) $("session").open = false;
  });
  $("role-new").addEventListener("click", () => showRoleForm(null));
  $("rule-add").addEventListener("click", () => $("rule-rows").append(ruleRow()));
  $("role-form").addEventListener("submit", saveRole);
  $("role-cancel").addEventListener("click", () => ($("role-form").hidden = true));
  $("role-reload").addEventListener("click", () => openRole(state.role.name));
  $("confirm-role-delete").addEventListener("close", confirmDeleteRole);
  $("token-role").addEventListener("change", fillVarNames);
  $("var-add").addEventListener("click", () => $("var-rows").append(varRow()));
  $("token-form").addEventListener("submit", createToken);
  $("token-copy").addEventListener("click", copySecret);
  $("token-created-done").addEventListener("click", forgetSecret);
  $("confirm-token-revoke").addEventListener("close", confirmRevoke);
}

// ---------------------------------------------------------------------------------------------
// Backups: /ui/.backups (GET /v1/backup, GET /v1/archive), for a session that may administer.
// A backup streams into the tab and is saved as a file; the archive's status is read again every
// ARCHIVE_REFRESH_MS while the page is shown.

const ARCHIVE_REFRESH_MS = 5000;

function backupsRoute() {
  return /^\/ui\/\.backups\/?$/.test(location.pathname);
}

async function renderBackups() {
  const generation = ++state.generation;
  clearError();
  clearInterval(state.ttlTimer);
  state.path = null;
  state.item = null;
  state.editing = null;
  const read = ++state.archiveReads;
  let archive = null;
  let failure = null;
  try {
    archive = (await api("GET", "/v1/archive")).json;
  } catch (e) {
    failure = e;
  }
  if (generation !== state.generation) return; // a later navigation owns the page now
  state.view = "backups";
  // Refused (not an admin): the sentence, and nothing to press. Any other failure leaves the
  // backup button, and says the status could not be read.
  const refused = failure instanceof ApiError && (failure.status === 401 || failure.status === 403);
  $("backups-panels").hidden = refused;
  $("backups-denied").hidden = !refused || failure.status !== 403;
  document.title = "Backups · PathDB";
  $("crumbs").replaceChildren();
  $("main").hidden = true;
  $("ns-page").hidden = true;
  $("access-page").hidden = true;
  $("notice").hidden = true;
  $("nav-namespaces").removeAttribute("aria-current");
  $("nav-access").removeAttribute("aria-current");
  $("nav-backups").setAttribute("aria-current", "page");
  $("backups-page").hidden = false;
  if (refused) showError(failure);
  else {
    if (failure) showArchiveUnread(failure);
    else if (read === state.archiveReads) showArchive(archive);
    scheduleArchiveRefresh();
  }
  document.body.dataset.renderedAt = performance.now().toFixed(1);
}

/** Reads /v1/archive now and shows it (unless the page changed, or a newer read answered). */
async function refreshArchive() {
  const poll = state.poll;
  const read = ++state.archiveReads;
  clearTimeout(state.archiveTimer);
  try {
    const archive = (await api("GET", "/v1/archive")).json;
    if (poll === state.poll && state.view === "backups" && read === state.archiveReads) showArchive(archive);
  } catch (e) {
    if (poll === state.poll && state.view === "backups" && read === state.archiveReads) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return showError(e);
      showArchiveUnread(e);
    }
  }
  if (poll === state.poll && state.view === "backups") scheduleArchiveRefresh();
}

/** The next read, in ARCHIVE_REFRESH_MS, for as long as the page is shown (a hidden tab waits). */
function scheduleArchiveRefresh() {
  const poll = state.poll;
  clearTimeout(state.archiveTimer);
  state.archiveTimer = setTimeout(() => {
    if (poll !== state.poll || state.view !== "backups") return;
    if (document.hidden) return; // visibilitychange reads again when the tab is shown
    refreshArchive();
  }, ARCHIVE_REFRESH_MS);
}

function showArchiveUnread(error) {
  $("archive-unread").replaceChildren("Could not read the archive's status: ", ...errorMessage(error),
    " (what is shown below may be out of date).");
  $("archive-unread").hidden = false;
}

function pad2(n) {
  return String(n).padStart(2, "0");
}

/** "2026-11-29 10:15:03": an instant in this browser's time zone. */
function localTime(micros) {
  const d = new Date(micros / 1000);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** "3 min ago". */
function ago(micros) {
  const s = Math.round((Date.now() - micros / 1000) / 1000);
  if (s < 2) return "just now";
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** An instant as local time (with the zone's name) and as UTC, in a <time>. */
function bothTimes(micros) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
  const t = el("time", "both-times");
  t.dateTime = new Date(micros / 1000).toISOString();
  t.append(`${localTime(micros)} ${zone}`, " ", el("span", "muted", `(${when(micros).replace(/Z$/, " UTC")})`));
  return t;
}

function plural(n, one, many = one + "s") {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

/** "1.2 MB": a size, in powers of 1024. */
function sizeText(bytes) {
  if (bytes < 1024) return plural(bytes, "byte");
  const units = ["KB", "MB", "GB", "TB"];
  let n = bytes / 1024;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(1)} ${units[i]}`;
}

/** Shows what /v1/archive answered. */
function showArchive(a) {
  const panel = $("archive-panel");
  panel.dataset.enabled = String(a.enabled);
  panel.dataset.lastCommit = String(a.last_commit);
  panel.dataset.reads = String(Number(panel.dataset.reads || 0) + 1);
  $("archive-unread").hidden = true;
  $("archive-read-at").textContent = `read at ${localTime(Date.now() * 1000)}; read again every ${ARCHIVE_REFRESH_MS / 1000} s`;
  $("archive-off").hidden = a.enabled;
  $("archive-on").hidden = !a.enabled;
  if (!a.enabled) return;
  $("archive-target").textContent = a.target ?? "—";
  const span = $("archive-window");
  if (a.window)
    span.replaceChildren("from ", bothTimes(a.window.from), el("br"), "to ", bothTimes(a.window.to), ` (${ago(a.window.to)})`);
  else span.replaceChildren(el("span", "muted", "nothing yet: the target holds no base backup"));
  const restorable = $("archive-restorable");
  if (a.restorable_commit == null) restorable.replaceChildren(el("span", "muted", "none yet"));
  else
    restorable.textContent =
      `commit ${a.restorable_commit}` +
      (a.restorable_commit >= a.last_commit ? " (the database's last commit)" : ` (the database is at commit ${a.last_commit})`);
  $("archive-lag").textContent =
    a.lag_commits === 0
      ? "none: every commit is in the target"
      : `${plural(a.lag_commits, "commit")}, ${a.lag_seconds.toFixed(1)} s (not yet in the target)`;
  const base = $("archive-base");
  if (a.last_base) base.replaceChildren(`commit ${a.last_base.commit}, taken `, bothTimes(a.last_base.taken_at), ` (${ago(a.last_base.taken_at)})`);
  else base.replaceChildren(el("span", "muted", "none taken by this server yet"));
  const failures = $("archive-failures");
  failures.textContent = a.failures === 0 ? "none since the server started" : `${a.failures.toLocaleString("en-US")} since the server started`;
  failures.classList.toggle("alarm", a.failures > 0);
  $("archive-error-message").textContent = a.error ?? "";
  $("archive-error").hidden = !a.error;
  $("archive-gap-list").replaceChildren(
    ...(a.gaps || []).map(([from, to]) => {
      const li = el("li", "", from === to ? `commit ${from} missing` : `commits ${from} to ${to} missing`);
      li.dataset.from = String(from);
      li.dataset.to = String(to);
      return li;
    }),
  );
  $("archive-gaps").hidden = !(a.gaps || []).length;
  $("archive-contents").textContent = `${plural(a.bases, "base backup")}, ${plural(a.segments, "segment")}`;
}

/** The file name of a Content-Disposition `attachment; filename="..."`, or null. */
function attachmentName(disposition) {
  const name = /filename="([^"\\/]+)"/.exec(disposition || "")?.[1];
  return name || null;
}

/** "Take a backup": GET /v1/backup into a blob, counting the bytes, then saved by the browser. */
async function takeBackup() {
  if (state.backingUp) return;
  state.backingUp = true;
  clearError();
  const button = $("backup-take");
  const progress = $("backup-progress");
  $("backup-error").hidden = true;
  delete progress.dataset.bytes;
  delete progress.dataset.file;
  button.disabled = true;
  progress.textContent = "Starting the backup…";
  const started = performance.now();
  let received = 0;
  try {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { Accept: "application/octet-stream" };
    if (token) headers.Authorization = "Bearer " + token;
    let response;
    try {
      response = await fetch("/v1/backup", { headers, cache: "no-store" });
    } catch (e) {
      throw new Error(`the server could not be reached (${e.message})`);
    }
    if (!response.ok) throw await apiError(response);
    const name = attachmentName(response.headers.get("Content-Disposition")) || `pathdb-${Math.floor(Date.now() / 1000)}.pdbbackup`;
    const chunks = [];
    const reader = response.body.getReader();
    let painted = 0;
    for (;;) {
      let next;
      try {
        next = await reader.read();
      } catch (e) {
        // The server ends the body with an error when the backup fails midway.
        throw new Error(`the stream stopped after ${sizeText(received)} (${e.message}): the backup ended early, and nothing was saved (the server's log says why)`);
      }
      if (next.done) break;
      chunks.push(next.value);
      received += next.value.length;
      if (performance.now() - painted > 100) {
        painted = performance.now();
        progress.textContent = `Receiving ${name}: ${sizeText(received)}…`;
      }
    }
    const url = URL.createObjectURL(new Blob(chunks, { type: "application/octet-stream" }));
    // Not in the document: the console's link handler must not see it.
    const link = el("a");
    link.href = url;
    link.download = name;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    progress.textContent = `Saved ${name}: ${sizeText(received)}` + (received >= 1024 ? ` (${plural(received, "byte")})` : "") + ` in ${seconds} s.`;
    progress.dataset.bytes = String(received);
    progress.dataset.file = name;
  } catch (e) {
    progress.textContent = "";
    if (e instanceof ApiError && e.status === 401) showError(e);
    else {
      $("backup-error").replaceChildren("No backup: ", ...errorMessage(e));
      $("backup-error").hidden = false;
    }
  } finally {
    button.disabled = false;
    state.backingUp = false;
  }
}

function initBackups() {
  $("backup-take").addEventListener("click", takeBackup);
  $("archive-refresh").addEventListener("click", refreshArchive);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.view === "backups" && !$("backups-page").hidden) refreshArchive();
  });
}

// ---------------------------------------------------------------------------------------------
// Navigation and keys

/** Opens `href`, then says what was done. */
async function go(href, notice) {
  history.pushState(null, "", href);
  await render();
  $("notice").textContent = notice;
  $("notice").hidden = false;
}

function navigate(href) {
  history.pushState(null, "", href);
  render();
}

function applyListForm(event) {
  event.preventDefault();
  const params = new URLSearchParams();
  if ($("reverse").checked) params.set("reverse", "true");
  if ($("gt").value.trim()) params.set("gt", $("gt").value.trim());
  if ($("lt").value.trim()) params.set("lt", $("lt").value.trim());
  if ($("limit").value !== "100") params.set("limit", $("limit").value);
  if ($("list-subtree").checked) params.set("subtree", "true");
  if ($("filter").value.trim()) params.set("filter", $("filter").value.trim());
  if ($("fields").value.trim()) params.set("fields", $("fields").value.trim());
  if ($("max-scan").value.trim()) params.set("max_scan", $("max-scan").value.trim());
  const search = params.toString();
  navigate(location.pathname + (search ? "?" + search : ""));
}

async function turnPage(delta) {
  const target = state.page + delta;
  if (target < 0 || target >= state.pages.length) return;
  state.page = target;
  clearError();
  try {
    await loadChildren();
  } catch (e) {
    showError(e);
  }
}

function parentHref() {
  if (!state.path) return null;
  const parts = splitPath(state.path);
  parts.pop();
  return parts.length ? uiHref("/" + parts.join("/")) : "/ui/";
}

function focusChild(delta) {
  const links = [...document.querySelectorAll("#children a.child")];
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  const next = at < 0 ? (delta > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + delta));
  links[next].focus();
}

function onKey(event) {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (event.key === "Escape") {
    clearError();
    if (typing) document.activeElement.blur();
    return;
  }
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  if (state.view !== "node") {
    if (event.key === "/") {
      event.preventDefault();
      $("goto").focus();
    }
    return;
  }
  const actions = {
    "/": () => $("goto").focus(),
    j: () => focusChild(1),
    ArrowDown: () => focusChild(1),
    k: () => focusChild(-1),
    ArrowUp: () => focusChild(-1),
    n: () => turnPage(1),
    p: () => turnPage(-1),
    u: () => parentHref() && navigate(parentHref()),
    Backspace: () => parentHref() && navigate(parentHref()),
  };
  const action = actions[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
}

function init() {
  document.addEventListener("click", (event) => {
    const a = event.target.closest("a");
    if (a && a.origin === location.origin && a.pathname.startsWith("/ui") && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      event.preventDefault();
      navigate(a.getAttribute("href"));
    }
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", render);
  $("error-close").addEventListener("click", clearError);
  $("goto-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("goto").value.trim();
    $("goto").value = "";
    $("goto").blur();
    navigate(text === "" || text === "/" ? "/ui/" : uiHref(text.startsWith("/") ? text : "/" + text));
  });
  $("signin").addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    $("token").value = "";
    clearError();
    if (await start()) signedInNotice();
  });
  $("signout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  $("list-form").addEventListener("submit", applyListForm);
  $("prev").addEventListener("click", () => turnPage(-1));
  $("next").addEventListener("click", () => turnPage(1));
  $("edit").addEventListener("click", startEdit);
  $("item-schema-pick").addEventListener("change", pickSchemaVersion);
  $("cancel").addEventListener("click", () => {
    $("editor-form").hidden = true;
    clearViolations("editor");
  });
  $("editor-form").addEventListener("submit", (event) => save(event));
  $("conflict-overwrite").addEventListener("click", overwrite);
  $("conflict-discard").addEventListener("click", discard);
  $("delete").addEventListener("click", askDelete);
  $("delete-subtree").addEventListener("click", askDeleteSubtree);
  $("confirm-delete-subtree").addEventListener("close", confirmDeleteSubtree);
  $("move-subtree").addEventListener("click", askMove);
  $("move-dialog").addEventListener("close", confirmMove);
  $("confirm-delete").addEventListener("close", confirmDelete);
  $("create-form").addEventListener("submit", createItem);
  for (const id of ["new-ns", "new-id"]) $(id).addEventListener("input", updatePreview);
  $("new-type").addEventListener("change", () => {
    const noId = $("new-type").value === "none" || generatedKind() !== null;
    $("new-id").disabled = noId;
    $("new-generate").disabled = noId;
    updatePreview();
  });
  $("new-generate").addEventListener("click", generateId);
  $("editor").addEventListener("input", () => state.marked && markEditor(state.marked));
  $("editor").addEventListener("scroll", syncMarks);
  $("ns-prev").addEventListener("click", () => turnNamespacePage(-1));
  $("ns-next").addEventListener("click", () => turnNamespacePage(1));
  $("ns-new-form").addEventListener("submit", openNewNamespace);
  $("ns-form").addEventListener("submit", checkNamespace);
  $("ns-save").addEventListener("click", () => saveNamespace());
  $("ns-save-cancel").addEventListener("click", () => ($("ns-dry-run").hidden = true));
  $("ns-conflict-overwrite").addEventListener("click", overwriteNamespace);
  $("ns-conflict-discard").addEventListener("click", reloadDefinition);
  $("ns-delete").addEventListener("click", askDeleteNamespace);
  $("confirm-ns-delete").addEventListener("close", confirmDeleteNamespace);
  $("viol-more").addEventListener("click", moreViolations);
  initAccess();
  initBackups();
  start();
}

/** Reads the session, then shows the page; true when signed in. */
async function start() {
  try {
    if (await loadSession()) {
      await render();
      return true;
    }
  } catch (e) {
    showError(e);
  }
  return false;
}

init();
