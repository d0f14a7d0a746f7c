"""Browser tests of the web console (scripts/console.sh runs them): headless Chromium from
Debian's packages, driven by selenium, against one `pathdb serve` with tokens. Each test
asserts what a person sees; the screenshots of docs/console.md are taken on the way.

    python console_test.py URL RW_TOKEN RO_TOKEN SCREENSHOT_DIR RESULTS_JSON N_CHILDREN ADMIN_TOKEN

N_CHILDREN is how many children seed.py wrote under /big-1 (at least 300). The tests of
access_test.py (roles, tokens, what a token may do), backups_test.py (the Backups page) and
filters_test.py (the filter box of a listing) run after these.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

URL, RW, RO, SHOTS, RESULTS = sys.argv[1:6]
N = int(sys.argv[6])
ADMIN = sys.argv[7]
BIG_PAGE = min(N, 1000)
# Viewports (the page's size, without the browser's own bars): a laptop and a phone.
WIDE = (1280, 900)
PHONE = (390, 844)
results = {}


def api(method, path, body=None, token=RW, headers=None, content_type="application/json"):
    request = urllib.request.Request(URL + path, method=method)
    request.add_header("Authorization", "Bearer " + token)
    for k, v in (headers or {}).items():
        request.add_header(k, v)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, data) as response:
        return json.loads(response.read() or b"null")


def status_of(method, path, token=RW):
    try:
        api(method, path, token=token)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


PROFILE = tempfile.mkdtemp(prefix="pathdb-chromium-")


def make_driver():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # Without the background-networking flags Chromium calls Google hosts, which CI cannot reach.
    for flag in [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
        "--user-data-dir=" + PROFILE,
    ]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def set_viewport(size):
    """Sizes the window so that the page gets exactly SIZE (the window's bars take some)."""
    width, height = size
    driver.set_window_size(width, height)
    for _ in range(3):
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        if inner == [width, height]:
            return
        outer = driver.get_window_size()
        driver.set_window_size(outer["width"] + width - inner[0], outer["height"] + height - inner[1])
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    assert inner == [width, height], f"viewport {inner}, wanted {size}"


driver = make_driver()
set_viewport(WIDE)
wait = WebDriverWait(driver, 10, poll_frequency=0.05)


def by_id(name):
    return driver.find_element(By.ID, name)


def shown(name):
    return wait.until(EC.visibility_of_element_located((By.ID, name)))


def children():
    # One script, so a list replaced mid-read cannot leave a stale element behind.
    return driver.execute_script(
        "return [...document.querySelectorAll('#children a.child')].map(a => a.textContent)")


def n_children():
    return driver.execute_script("return document.querySelectorAll('#children a.child').length")


def open_page(path):
    """Loads a console URL and waits until its list has rendered for this load."""
    driver.get(URL + path)
    wait.until(lambda d: d.execute_script("return document.body.dataset.renderedAt !== undefined")
               or by_id("signin").is_displayed() or by_id("error").is_displayed())


def wait_rendered_after(previous):
    wait.until(lambda d: d.execute_script("return document.body.dataset.renderedAt") != previous)


def rendered_at():
    return driver.execute_script("return document.body.dataset.renderedAt")


def screenshot(name):
    # Wait for fonts and the last layout, so the picture is what a person sees.
    driver.execute_script("return document.fonts.ready")
    time.sleep(0.2)
    driver.save_screenshot(f"{SHOTS}/console-{name}.png")


def sign_in(token):
    driver.get(URL + "/ui/")
    driver.execute_script("sessionStorage.clear()")
    driver.get(URL + "/ui/")
    shown("signin")
    by_id("token").send_keys(token)
    by_id("signin-button").click()
    shown("main")
    wait.until(lambda d: children())


# ---------------------------------------------------------------------------------------------


def test_sign_in_and_groups_in_key_order():
    driver.get(URL + "/")  # redirects to /ui/
    assert driver.current_url == URL + "/ui/", driver.current_url
    driver.execute_script("sessionStorage.clear()")
    driver.refresh()
    shown("signin")
    assert not by_id("main").is_displayed()
    screenshot("signin")
    # A wrong token: the API's message, and the form again.
    by_id("token").send_keys("not-a-token")
    by_id("signin-button").click()
    wait.until(lambda d: by_id("error").is_displayed())
    assert "unknown token" in by_id("error-message").text, by_id("error-message").text
    assert by_id("signin").is_displayed() and not by_id("main").is_displayed()
    sign_in(RW)
    assert children() == ["/big-1", "/season-2026-spring", "/user-7", "/user-42"], children()
    assert by_id("scope").text == "read-write token"
    # The page says "Groups" once (its title), and the list starts right below its panel's top.
    headings = driver.execute_script(
        "return [...document.querySelectorAll('h1, h2, h3')].filter(h => h.offsetParent && h.textContent === 'Groups').length")
    assert headings == 1, headings
    gap = driver.execute_script(
        "return document.querySelector('#children li').getBoundingClientRect().top"
        " - document.getElementById('children-panel').getBoundingClientRect().top")
    assert gap < 30, f"{gap}px of blank space above the groups"
    # Creating keeps no history unless asked, as with the CLI and the API.
    assert not by_id("new-history").is_selected()
    screenshot("groups")


def test_navigation_down_to_a_leaf_and_back():
    open_page("/ui/")
    driver.find_element(By.LINK_TEXT, "/user-7").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-7"))
    wait.until(lambda d: "/user-7/post-2" in children())
    # Integers in key order: 1, 2, 10 (no zero-padding), then the next namespace.
    assert children() == ["/user-7/post-1", "/user-7/post-2", "/user-7/post-10", "/user-7/profile"], children()
    wait.until(lambda d: '"name": "Ada"' in by_id("value").text and by_id("item").is_displayed())
    # Keyboard: j moves to the first child, j again to the second, Enter opens it.
    driver.find_element(By.TAG_NAME, "body").send_keys("j")
    driver.switch_to.active_element.send_keys("j")
    assert driver.switch_to.active_element.text == "/user-7/post-2"
    before = rendered_at()
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    wait.until(lambda d: d.current_url.endswith("/ui/user-7/post-2"))
    wait_rendered_after(before)
    wait.until(lambda d: children() == ["/user-7/post-2/comment-1"])
    wait.until(lambda d: "second thoughts" in by_id("value").text)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#segments tr")) == 4)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-rows tr")) == 2)
    screenshot("node")
    driver.find_element(By.LINK_TEXT, "/user-7/post-2/comment-1").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-7/post-2/comment-1"))
    shown("children-empty")
    assert by_id("node-path").text == "/user-7/post-2/comment-1"
    # "Nothing here." follows the list's controls without a blank band.
    gap = driver.execute_script(
        "return document.getElementById('children-empty').getBoundingClientRect().top"
        " - document.getElementById('list-form').getBoundingClientRect().bottom")
    assert gap < 30, f"{gap}px of blank space above 'Nothing here.'"
    wait.until(lambda d: '"text": "first!"' in by_id("value").text)
    # Back: the browser's back button, then `u` (up one element), then the crumbs to the root.
    driver.back()
    wait.until(lambda d: d.current_url.endswith("/ui/user-7/post-2"))
    wait.until(lambda d: children() == ["/user-7/post-2/comment-1"])
    driver.find_element(By.TAG_NAME, "body").send_keys("u")
    wait.until(lambda d: d.current_url.endswith("/ui/user-7"))
    wait.until(lambda d: "/user-7/post-10" in children())
    driver.find_element(By.ID, "home").click()
    wait.until(lambda d: d.current_url == URL + "/ui/")
    wait.until(lambda d: children() and children()[0] == "/big-1")


def test_a_folder_without_an_item_opens_through_its_node():
    open_page("/ui/user-42")
    wait.until(lambda d: "/user-42/folder-trip/" in children())
    assert children() == ["/user-42/folder-trip/", "/user-42/session-1"], children()
    driver.find_element(By.LINK_TEXT, "/user-42/folder-trip/").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-42/folder-trip"))
    wait.until(lambda d: children() == ["/user-42/folder-trip/photo-1", "/user-42/folder-trip/photo-2"])
    driver.find_element(By.LINK_TEXT, "/user-42/folder-trip/photo-2").click()
    wait.until(lambda d: '"name": "dunes.jpg"' in by_id("value").text)


def test_rename_and_delete_a_subtree():
    for path, n in [("user-43/folder-docs/file-1", 1), ("user-43/folder-docs/sub-1/file-2", 2),
                    ("user-43/folder-docs0", 3)]:
        api("PUT", "/v1/items/" + path, {"n": n})
    # A node (no item of its own): renamed, then its new name deleted, each confirmed.
    open_page("/ui/user-43/folder-docs")
    wait.until(lambda d: children() == ["/user-43/folder-docs/file-1", "/user-43/folder-docs/sub-1/"])
    shown("subtree")
    by_id("move-subtree").click()
    shown("move-dialog")
    wait.until(lambda d: by_id("move-count").text == "2 items")
    field = by_id("move-to")
    field.clear()
    field.send_keys("/user-43/folder-papers")
    by_id("move-yes").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-43/folder-papers"))
    wait.until(lambda d: children() == ["/user-43/folder-papers/file-1", "/user-43/folder-papers/sub-1/"])
    assert shown("notice").text == "Moved 2 items from /user-43/folder-docs to /user-43/folder-papers."
    assert api("GET", "/v1/items/user-43/folder-papers/sub-1/file-2")["value"] == {"n": 2}
    by_id("delete-subtree").click()
    shown("confirm-delete-subtree")
    wait.until(lambda d: by_id("subtree-count").text == "2 items")
    driver.find_element(By.CSS_SELECTOR, "#confirm-delete-subtree button[value=no]").click()
    assert children() == ["/user-43/folder-papers/file-1", "/user-43/folder-papers/sub-1/"]
    by_id("delete-subtree").click()
    shown("confirm-delete-subtree")
    by_id("subtree-yes").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-43"))
    wait.until(lambda d: children() == ["/user-43/folder-docs0"])
    assert shown("notice").text == "Deleted 2 items at and below /user-43/folder-papers."


def test_deep_link_to_the_seed_leaderboard_shows_scores_descending():
    open_page("/ui/season-2026-spring")
    wait.until(lambda d: children())
    scores = [int(p.rsplit("-!", 1)[1]) for p in children()]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5, children()
    assert children()[0] == "/season-2026-spring/score-!2300"
    screenshot("leaderboard")
    # The deep link keeps the listing's options: reversed, the lowest score comes first.
    open_page("/ui/season-2026-spring?reverse=true")
    wait.until(lambda d: children() and children()[0] == "/season-2026-spring/score-!870")
    assert by_id("reverse").is_selected()
    open_page("/ui/season-2026-spring")
    wait.until(lambda d: children() and children()[0] == "/season-2026-spring/score-!2300")
    first = driver.find_element(By.CSS_SELECTOR, "#children a.child")
    first.click()
    wait.until(lambda d: d.current_url.endswith("/ui/season-2026-spring/score-!2300"))
    # The key panel of the previous node stays until the new one arrives: wait for 4 segments.
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#segments tr")) == 4)
    rows = shown("segments").find_elements(By.TAG_NAME, "tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [
        "namespace", "string", "namespace", "desc integer"]
    assert rows[3].find_elements(By.TAG_NAME, "td")[0].text == "!2300"
    dynamo = by_id("eq-dynamodb").text
    assert "c2Vhc29uATIwMjYtc3ByaW5nADBY" in dynamo and "BETWEEN :a AND :z" in dynamo, dynamo
    assert "pathdb --server" in by_id("eq-cli").text and "'/season-2026-spring/score-!2300'" in by_id("eq-cli").text
    assert "curl -s" in by_id("eq-curl").text
    # The equivalent requests wrap: nothing hides behind a horizontal scrollbar.
    hidden = driver.execute_script(
        "return [...document.querySelectorAll('pre.cmd')].filter(p => p.scrollWidth > p.clientWidth).map(p => p.id)")
    assert hidden == [], f"cut off: {hidden}"
    # Hex wraps between bytes, never inside one: each byte is one text box, on one line.
    split = driver.execute_script("""
        const split = [];
        if (document.querySelectorAll('#key .hex').length !== 5) split.push('(not 4 segments and the key in .hex)');
        for (const hex of document.querySelectorAll('#key .hex')) {
          for (const node of hex.childNodes) {
            if (node.nodeType !== Node.TEXT_NODE) continue;
            const range = document.createRange();
            range.selectNodeContents(node);
            if (node.textContent.length !== 2 || range.getClientRects().length !== 1) split.push(node.textContent);
          }
        }
        return split;""")
    assert split == [], f"bytes split across lines: {split}"
    assert driver.execute_script("return document.getElementById('key-sizes').textContent").endswith(
        "hex 736561736f6e01323032362d737072696e670173636f72650116f703003058281c"), by_id("key-sizes").text
    # Scrolled to the equivalent requests: the segments above, the DynamoDB Query below.
    driver.execute_script("document.querySelector('#key h3').scrollIntoView()")
    screenshot("key")
    driver.execute_script("window.scrollTo(0, 0)")


def test_ten_thousand_children_first_render_paging_reverse_and_bounds():
    """N children (10,000 on the embedded backend)."""
    driver.get(URL + "/ui/big-1")
    wait.until(lambda d: n_children() == 100)
    # performance.now() counts from the navigation's start: the time to the first rendered page.
    first_render_ms = float(rendered_at())
    results["big_first_render_ms"] = first_render_ms
    assert first_render_ms < 3000, first_render_ms
    assert children()[0] == "/big-1/n-1" and children()[-1] == "/big-1/n-100"
    screenshot("big")
    # The largest page the API gives (1,000), to bound the cost of one render.
    driver.get(URL + "/ui/big-1?limit=1000")
    wait.until(lambda d: n_children() == BIG_PAGE)
    results["big_first_render_1000_ms"] = float(rendered_at())
    assert results["big_first_render_1000_ms"] < 5000, results
    assert driver.execute_script(
        "return document.querySelector('#children li:last-child a').textContent") == f"/big-1/n-{BIG_PAGE}"
    driver.get(URL + "/ui/big-1")
    wait.until(lambda d: n_children() == 100)
    starts = []
    for button in ["next", "next", "prev", "prev"]:
        before = rendered_at()
        by_id(button).click()
        wait_rendered_after(before)
        starts.append(children()[0])
    assert starts == ["/big-1/n-101", "/big-1/n-201", "/big-1/n-101", "/big-1/n-1"], starts
    assert not by_id("prev").is_enabled()
    # Reverse, then a typed bound: after n-9 comes n-10 (integers, not text).
    by_id("reverse").click()
    before = rendered_at()
    by_id("apply").click()
    wait_rendered_after(before)
    assert children()[0] == f"/big-1/n-{N}" and children()[1] == f"/big-1/n-{N - 1}", children()[:2]
    assert "reverse=true" in driver.current_url
    by_id("reverse").click()
    by_id("gt").send_keys("/big-1/n-9")
    Select(by_id("limit")).select_by_visible_text("10")
    before = rendered_at()
    by_id("apply").click()
    wait_rendered_after(before)
    assert children() == [f"/big-1/n-{i}" for i in range(10, 20)], children()
    # The page stays responsive: scrolling and paging do not wait on anything but the API.
    before = rendered_at()
    clicked = driver.execute_script("return performance.now()")
    by_id("next").click()
    wait_rendered_after(before)
    results["big_next_page_ms"] = round(float(rendered_at()) - clicked, 1)
    assert children()[0] == "/big-1/n-20"


def test_create_edit_with_a_conflict_history_and_delete():
    open_page("/ui/user-7")
    shown("create")
    by_id("new-ns").send_keys("post")
    Select(by_id("new-type")).select_by_value("int")
    by_id("new-id").send_keys("99")
    assert by_id("new-path-preview").text == "/user-7/post-99"
    # History is off by default (as with the CLI and the API); this item keeps it.
    assert not by_id("new-history").is_selected()
    by_id("new-history").click()
    value = by_id("new-value")
    value.clear()
    value.send_keys('{"title": "draft"}')
    by_id("create-button").click()
    wait.until(lambda d: d.current_url.endswith("/ui/user-7/post-99"))
    # /user-7 is at version 1 too: wait for this item's value.
    wait.until(lambda d: '"draft"' in by_id("value").text and by_id("item-version").text == "1")
    # Edit: If-Match "1", saved as version 2.
    by_id("edit").click()
    editor = shown("editor")
    editor.clear()
    editor.send_keys('{"title": "published"}')
    by_id("save").click()
    wait.until(lambda d: by_id("item-version").text == "2")
    # Someone else writes version 3; our next edit still holds version 2.
    api("PUT", "/v1/items/user-7/post-99?history=true", {"title": "theirs"})
    by_id("edit").click()
    editor = shown("editor")
    editor.clear()
    editor.send_keys('{"title": "mine"}')
    by_id("save").click()
    shown("conflict")
    assert by_id("conflict-base").text == "2" and by_id("conflict-current").text == "3"
    assert '"mine"' in by_id("conflict-mine").text and '"theirs"' in by_id("conflict-theirs").text
    assert "+   \"title\": \"mine\"" in by_id("conflict-diff").text, by_id("conflict-diff").text
    screenshot("conflict")
    by_id("conflict-overwrite").click()
    wait.until(lambda d: by_id("item-version").text == "4")
    assert '"mine"' in by_id("value").text
    # History: every version was kept; the diff shows the newest two by default.
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-rows tr")) == 4)
    versions = [r.get_attribute("data-version") for r in driver.find_elements(By.CSS_SELECTOR, "#history-rows tr")]
    assert versions == ["4", "3", "2", "1"], versions
    diff = by_id("diff").text
    assert '-   "title": "theirs"' in diff and '+   "title": "mine"' in diff, diff
    # Pick version 1 as "from": the diff follows.
    driver.find_element(By.CSS_SELECTOR, "input[name=from][value='3']").click()
    wait.until(lambda d: '-   "title": "draft"' in by_id("diff").text)
    driver.execute_script("document.getElementById('history').scrollIntoView()")
    screenshot("history")
    driver.execute_script("window.scrollTo(0, 0)")
    # Delete, with confirmation; cancelling first keeps it.
    by_id("delete").click()
    shown("confirm-delete")
    by_id("confirm-no").click()
    assert by_id("item").is_displayed()
    by_id("delete").click()
    shown("confirm-delete")
    before = rendered_at()
    by_id("confirm-yes").click()
    wait_rendered_after(before)
    shown("no-item")
    # History outlives the item; the listing no longer shows it.
    assert len(driver.find_elements(By.CSS_SELECTOR, "#history-rows tr")) == 4
    open_page("/ui/user-7")
    wait.until(lambda d: "/user-7/post-10" in children())
    assert "/user-7/post-99" not in children()


def open_editor(path, value):
    """Opens the item at `path` (holding `value`, at version 1) and its editor."""
    open_page("/ui/" + path)
    wait.until(lambda d: by_id("item").is_displayed() and by_id("item-version").text == "1"
               and json.loads(by_id("value").text) == value)
    by_id("edit").click()
    return shown("editor")


def type_value(editor, value):
    editor.clear()
    editor.send_keys(json.dumps(value))


def test_edits_of_different_members_by_two_writers_both_survive():
    path = "user-44/doc-1"
    api("PUT", f"/v1/items/{path}?history=true", {"title": "a", "body": "b"})
    editor = open_editor(path, {"title": "a", "body": "b"})
    assert by_id("editor-base").text == "1"
    # Another writer changes `body` while the editor is open on version 1.
    other = api("PATCH", f"/v1/items/{path}?history=true", {"body": "theirs"},
                content_type="application/merge-patch+json")
    assert other["version"] == 2, other
    # The console's user changes `title`: a merge patch of `title` with If-Match "1" is refused
    # (412); nobody else touched `title`, so the same patch goes again with If-Match "2".
    type_value(editor, {"title": "mine", "body": "b"})
    by_id("save").click()
    wait.until(lambda d: by_id("item-version").text == "3")
    stored = api("GET", f"/v1/items/{path}")
    assert stored["value"] == {"title": "mine", "body": "theirs"}, stored
    assert stored["version"] == 3, stored
    assert json.loads(by_id("value").text) == {"title": "mine", "body": "theirs"}, by_id("value").text
    assert not by_id("conflict").is_displayed()
    assert "on top of version 2" in shown("saved").text, by_id("saved").text
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-rows tr")) == 3)
    # Saving what was opened writes nothing.
    by_id("edit").click()
    type_value(shown("editor"), {"body": "theirs", "title": "mine"})
    by_id("save").click()
    wait.until(lambda d: by_id("saved").text == "No changes: nothing was written.")
    assert not by_id("editor-form").is_displayed()
    assert api("GET", f"/v1/items/{path}")["version"] == 3
    # A member set to null cannot be a merge patch (null removes): the whole value, with If-Match.
    by_id("edit").click()
    type_value(shown("editor"), {"title": "mine", "body": None})
    by_id("save").click()
    wait.until(lambda d: by_id("item-version").text == "4")
    assert api("GET", f"/v1/items/{path}")["value"] == {"title": "mine", "body": None}
    # A removed member is a null in the patch: gone, and the other members stay.
    by_id("edit").click()
    type_value(shown("editor"), {"title": "mine"})
    by_id("save").click()
    wait.until(lambda d: by_id("item-version").text == "5")
    assert api("GET", f"/v1/items/{path}")["value"] == {"title": "mine"}
    api("DELETE", f"/v1/items/{path}")


def test_edits_of_the_same_member_by_two_writers_conflict():
    path = "user-44/doc-2"
    api("PUT", f"/v1/items/{path}?history=true", {"title": "a", "body": "b"})
    editor = open_editor(path, {"title": "a", "body": "b"})
    api("PATCH", f"/v1/items/{path}?history=true", {"title": "theirs"},
        content_type="application/merge-patch+json")
    type_value(editor, {"title": "mine", "body": "b"})
    by_id("save").click()
    shown("conflict")
    assert by_id("conflict-base").text == "1" and by_id("conflict-current").text == "2"
    assert by_id("conflict-fields").text == "Changed by you and by someone else: /title", by_id("conflict-fields").text
    assert '"mine"' in by_id("conflict-mine").text and '"theirs"' in by_id("conflict-theirs").text
    # Nothing was overwritten: the other writer's version stands.
    stored = api("GET", f"/v1/items/{path}")
    assert stored["value"] == {"title": "theirs", "body": "b"} and stored["version"] == 2, stored
    assert by_id("item-version").text == "1"
    by_id("conflict-discard").click()
    wait.until(lambda d: by_id("item-version").text == "2")
    assert json.loads(by_id("value").text) == {"title": "theirs", "body": "b"}
    assert not by_id("conflict").is_displayed()
    api("DELETE", f"/v1/items/{path}")


def test_the_typed_id_picker_writes_canonical_paths():
    open_page("/ui/user-7")
    shown("create")
    # (id type, what a person types, the element the preview shows)
    cases = [
        ("int", "-12", "tag--12"),
        ("string", "1234", "tag-%1234"),  # digits as a string: escaped, not an integer
        ("string", "a/b", "tag-a%/b"),
        ("uuid", "4C9D36E5-6B19-4E6A-828C-226ED667458A", "tag-4c9d36e5-6b19-4e6a-828c-226ed667458a"),
        ("bytes", "00ff10", "tag-~AP8Q"),
        ("desc-int", "1500", "tag-!1500"),
        ("desc-string", "zed", "tag-!zed"),
        ("desc-bytes", "00ff10", "tag-!~AP8Q"),
        ("none", "", "tag"),
    ]
    by_id("new-ns").send_keys("tag")
    for kind, raw, element in cases:
        Select(by_id("new-type")).select_by_value(kind)
        if kind != "none":
            by_id("new-id").clear()
            by_id("new-id").send_keys(raw)
        assert by_id("new-path-preview").text == "/user-7/" + element, (kind, by_id("new-path-preview").text)
    # The server agrees: what the preview shows is the canonical path the item lands at.
    for kind, raw, element in [cases[1], cases[4], cases[7]]:
        Select(by_id("new-type")).select_by_value(kind)
        by_id("new-ns").clear()
        by_id("new-ns").send_keys("tag")
        by_id("new-id").clear()
        by_id("new-id").send_keys(raw)
        by_id("create-button").click()
        wait.until(lambda d: by_id("node-path").text == "/user-7/" + element)
        wait.until(lambda d: by_id("item-version").text == "1")
        api("DELETE", "/v1/items" + urllib.request.quote("/user-7/" + element, safe="/-_.~!"))
        open_page("/ui/user-7")
    # A generated UUID is a valid one.
    Select(by_id("new-type")).select_by_value("uuid")
    by_id("new-generate").click()
    assert by_id("new-path-preview").get_attribute("class") != "bad"
    assert len(by_id("new-id").get_attribute("value")) == 36
    # Ids the server generates: the next in the namespace's sequence, twice.
    open_page("/ui/user-7")
    for expected in ["/user-7/seqtest-1", "/user-7/seqtest-2"]:
        open_page("/ui/user-7")
        Select(by_id("new-type")).select_by_value("gen-sequence")
        by_id("new-ns").clear()
        by_id("new-ns").send_keys("seqtest")
        assert by_id("new-path-preview").text == "/user-7/seqtest-{sequence}", by_id("new-path-preview").text
        by_id("create-button").click()
        wait.until(lambda d: by_id("node-path").text == expected)


def test_ttl_countdown_and_the_error_panel():
    open_page("/ui/user-42/session-1")
    wait.until(lambda d: by_id("ttl").text.startswith("in "))
    first = by_id("ttl").text
    wait.until(lambda d: by_id("ttl").text != first)  # it counts down
    open_page("/ui/user-01")
    shown("error")
    assert "leading zeros" in by_id("error-message").text, by_id("error-message").text
    by_id("error-close").click()
    assert not by_id("error").is_displayed()


PERSON = {"type": "object", "required": ["age"], "properties": {"age": {"type": "integer"}}}


def test_namespace_schema_editor_and_a_save_refused_by_the_schema():
    # Stored before the schema: the dry run reads both and finds person-0 without an age.
    api("PUT", "/v1/items/person-0", {"name": "no age"})
    api("PUT", "/v1/items/person-1", {"name": "Ada", "age": 36})
    sign_in(ADMIN)
    assert by_id("scope").text == "admin token"
    by_id("nav-namespaces").click()
    shown("ns-list-view")
    by_id("ns-new-name").send_keys("person")
    by_id("ns-new-open").click()
    wait.until(lambda d: d.current_url.endswith("/ui/.namespaces/person"))
    shown("ns-new-note")
    schema = shown("ns-schema")
    # Not JSON: refused in the page, nothing sent. Not a schema: the dry run's invalid_schema.
    schema.send_keys('{"type": ')
    by_id("ns-check").click()
    assert "the schema is not JSON" in shown("ns-schema-error").text, by_id("ns-schema-error").text
    schema.clear()
    schema.send_keys('{"type": 12}')
    by_id("ns-check").click()
    wait.until(lambda d: "the schema is invalid" in by_id("ns-schema-error").text)
    assert not by_id("ns-dry-run").is_displayed()
    assert status_of("GET", "/v1/namespaces/person") == 404
    # A valid one: the dry run counts what it would refuse, then Save creates version 1.
    schema.clear()
    schema.send_keys(json.dumps(PERSON))
    by_id("ns-description").send_keys("People, with their age")
    by_id("ns-check").click()
    shown("ns-dry-run")
    assert not by_id("ns-schema-error").is_displayed()
    assert by_id("ns-dry-run-summary").text == "1 of 2 stored items would violate this schema.", by_id("ns-dry-run-summary").text
    first = driver.find_elements(By.CSS_SELECTOR, "#ns-dry-run-first > li")
    assert [li.get_attribute("data-path") for li in first] == ["/person-0"] and "age" in first[0].text, first[0].text
    screenshot("namespace")
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "1")
    stored = api("GET", "/v1/namespaces/person")
    assert stored["schema"] == PERSON and stored["description"] == "People, with their age", stored
    # The violations view lists the stored item the schema refuses.
    by_id("ns-violations-link").click()
    wait.until(lambda d: [li.get_attribute("data-path") for li in d.find_elements(By.CSS_SELECTOR, "#viol-items > li")]
               == ["/person-0"])
    # Someone else saves version 2 while the editor holds version 1: the save is a 412, shown.
    by_id("viol-ns").click()
    wait.until(lambda d: by_id("ns-version").text == "1")
    api("PUT", "/v1/namespaces/person", {"schema": PERSON, "description": "theirs"}, token=ADMIN,
        headers={"If-Match": '"1"'})
    by_id("ns-history").send_keys("5")
    by_id("ns-check").click()
    shown("ns-dry-run")
    by_id("ns-save").click()
    assert "Someone else saved version 2" in shown("ns-conflict").text, by_id("ns-conflict").text
    assert api("GET", "/v1/namespaces/person")["description"] == "theirs"
    by_id("ns-conflict-discard").click()
    wait.until(lambda d: by_id("ns-version").text == "2" and by_id("ns-description").get_attribute("value") == "theirs")
    # The item editor: the server's 422 beside the member it names, the member marked in the text.
    editor = open_editor("person-1", {"name": "Ada", "age": 36})
    editor.clear()
    editor.send_keys(json.dumps({"name": "Ada", "age": "x"}, indent=2))
    by_id("save").click()
    entry = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, '#editor-violations-list li[data-pointer="/age"]')))
    assert "integer" in entry.text and "line 3" in entry.text, entry.text
    marked = driver.execute_script("return [...document.querySelectorAll('#editor-marks mark')].map(m => m.textContent)")
    assert marked == ['"age": "x"'], marked
    assert by_id("item-version").text == "1" and api("GET", "/v1/items/person-1")["version"] == 1
    screenshot("violation")
    # A violation of the whole value (no `age` at all) comes first, unmarked.
    type_value(editor, {"name": "Ada"})
    by_id("save").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#editor-violations-list li[data-pointer=""]'))
    assert driver.find_element(By.CSS_SELECTOR, "#editor-violations-list li").text.startswith("the whole value")
    # Fixed: saved, and the violations are gone.
    type_value(editor, {"name": "Ada", "age": 37})
    by_id("save").click()
    wait.until(lambda d: by_id("item-version").text == "2")
    assert not by_id("editor-violations").is_displayed()
    # Delete the definition, with confirmation; the items stay.
    open_page("/ui/.namespaces/person")
    wait.until(lambda d: by_id("ns-version").text == "2")
    by_id("ns-delete").click()
    shown("confirm-ns-delete")
    by_id("ns-delete-yes").click()
    wait.until(lambda d: d.current_url.endswith("/ui/.namespaces"))
    assert "Deleted the definition of person" in shown("notice").text
    assert status_of("GET", "/v1/namespaces/person") == 404 and api("GET", "/v1/items/person-0")
    # A read-write token sees definitions read-only.
    sign_in(RW)
    open_page("/ui/.namespaces/person")
    shown("ns-edit-view")
    assert not by_id("ns-check").is_displayed() and by_id("ns-schema").get_attribute("readonly") is not None


def test_a_namespace_without_a_change_log_stays_so_when_edited():
    # docs/changes.md, "Groups without a change log": set in the editor, then kept by every
    # later save of it (the server refuses a definition that drops it).
    sign_in(ADMIN)
    open_page("/ui/.namespaces")
    shown("ns-list-view")
    by_id("ns-new-name").send_keys("cart")
    by_id("ns-new-open").click()
    wait.until(lambda d: d.current_url.endswith("/ui/.namespaces/cart"))
    box = shown("ns-no-changes")
    assert not box.is_selected() and box.is_enabled()
    box.click()
    by_id("ns-check").click()
    shown("ns-dry-run")
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "1")
    assert api("GET", "/v1/namespaces/cart")["changes"] is False
    box = by_id("ns-no-changes")
    assert box.is_selected() and not box.is_enabled(), "once off, it cannot be turned back on here"
    by_id("ns-description").send_keys("Carts: nobody follows them")
    by_id("ns-check").click()
    shown("ns-dry-run")
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "2")
    stored = api("GET", "/v1/namespaces/cart")
    assert stored["changes"] is False and stored["description"] == "Carts: nobody follows them", stored
    # Its groups are written as any, and have no feed.
    api("PUT", "/v1/items/cart-1/line-1", {"sku": 7})
    assert status_of("GET", "/v1/changes/cart-1") == 400


def test_version_history_and_an_item_read_in_an_older_schema_version():
    # Version 1, an item stored in it, then version 2 renaming `name` (the rewrite of the stored
    # item starts in the background; reads in either version do not wait for it).
    v1 = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    v2 = {"type": "object", "required": ["full_name"], "properties": {"full_name": {"type": "string"}}}
    api("PUT", "/v1/namespaces/customer", {"schema": v1}, token=ADMIN)
    api("PUT", "/v1/items/customer-1", {"name": "Ada"})
    api("PUT", "/v1/namespaces/customer", {"schema": v2, "migrate": [
        {"op": "rename", "from": "/name", "to": "/full_name"}]}, token=ADMIN)
    # Any token reads definitions: the read-write one the other tests leave signed in.
    driver.get(URL + "/ui/.console/style.css")
    driver.execute_script("sessionStorage.setItem('pathdb.token', arguments[0])", RW)
    open_page("/ui/.namespaces/customer")
    wait.until(lambda d: by_id("ns-version").text == "2" and by_id("ns-versions").is_displayed())
    history = driver.execute_script(
        "return [...document.querySelectorAll('#ns-version-list > li')].map(li => [li.dataset.version,"
        " [...li.querySelectorAll('.steps > li')].map(s => s.textContent)])")
    assert history == [["2", ["rename /name → /full_name"]], ["1", []]], history
    assert "The first version." in by_id("ns-version-list").text, by_id("ns-version-list").text
    rewrite = shown("ns-rewrite")
    assert rewrite.get_attribute("data-to") == "2" and by_id("ns-rewrite-text").text.startswith("Rewrite to version 2: "), rewrite.text
    # The item reads in the current version; picked, version 1 shows the old member name.
    open_page("/ui/customer-1")
    wait.until(lambda d: by_id("item").is_displayed() and by_id("item-schema-version").text == "2")
    assert json.loads(by_id("value").text) == {"full_name": "Ada"}, by_id("value").text
    Select(shown("item-schema-pick")).select_by_value("1")
    wait.until(lambda d: by_id("item-schema-version").text == "1")
    assert json.loads(by_id("value").text) == {"name": "Ada"}, by_id("value").text
    assert "Schema-Version: customer=1" in shown("item-schema-note").text, by_id("item-schema-note").text
    # Edit opens the value as stored, in the current version.
    by_id("edit").click()
    assert json.loads(shown("editor").get_attribute("value")) == {"full_name": "Ada"}
    assert by_id("item-schema-version").text == "2" and not by_id("item-schema-note").is_displayed()
    by_id("cancel").click()


def test_a_new_version_with_migration_steps_and_an_incompatible_one_saved_anyway():
    v1 = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    v2 = {"type": "object", "required": ["full_name"], "properties": {"full_name": {"type": "string"}}}
    v3 = {"type": "object", "required": ["full_name", "plan"],
          "properties": {"full_name": {"type": "string"}, "plan": {"type": "string"}}}
    api("PUT", "/v1/namespaces/client", {"schema": v1}, token=ADMIN)
    api("PUT", "/v1/items/client-1", {"name": "Ada"})
    sign_in(ADMIN)
    open_page("/ui/.namespaces/client")
    wait.until(lambda d: by_id("ns-version").text == "1")
    schema, steps = shown("ns-schema"), shown("ns-migrate")
    # Steps that are not JSON are refused beside them; nothing is sent.
    steps.send_keys("[{")
    by_id("ns-check").click()
    assert "the migration steps are not JSON" in shown("ns-migrate-error").text, by_id("ns-migrate-error").text
    # Version 2 renames `name`: the dry run finds nothing incompatible, and the item reads renamed.
    schema.clear()
    schema.send_keys(json.dumps(v2))
    steps.clear()
    steps.send_keys(json.dumps([{"op": "rename", "from": "/name", "to": "/full_name"}]))
    by_id("ns-check").click()
    shown("ns-dry-run")
    assert not by_id("ns-dry-run-problems").is_displayed() and by_id("ns-save").text == "Save as version 2"
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "2")
    assert by_id("ns-migrate").get_attribute("value") == "", "steps belong to the version they led to"
    assert api("GET", "/v1/items/client-1")["value"] == {"full_name": "Ada"}
    # Version 3 requires a new member and says nothing of it: listed, and saved only anyway.
    schema = by_id("ns-schema")
    schema.clear()
    schema.send_keys(json.dumps(v3))
    by_id("ns-check").click()
    problems = shown("ns-dry-run-problems")
    assert "plan" in problems.text, problems.text
    assert by_id("ns-save").text == "Save as version 3 anyway", by_id("ns-save").text
    screenshot("namespace-incompatible")
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "3")
    assert not by_id("ns-dry-run").is_displayed()
    assert api("GET", "/v1/namespaces/client")["version"] == 3
    sign_in(RW)


def ensure_accounts():
    """Three accounts, and the definition of `account` with two alias templates, built (once)."""
    if status_of("GET", "/v1/namespaces/account") == 200:
        return
    for i, (handle, plan) in enumerate([("ada", "pro"), ("grace", "free"), ("1234", "pro")], 1):
        api("PUT", f"/v1/items/account-{i}", {"handle": handle, "plan": plan})
    api("PUT", "/v1/namespaces/account", {"aliases": [
        {"path": "/handle-{handle}"}, {"path": "/plan-{plan}/account-{@account}"}]}, token=ADMIN)
    # The PUT waits 200 ms for the builds; a slow machine (or moto) may need longer.
    deadline = time.monotonic() + 120
    while any(b["state"] != "ready" for b in api("GET", "/v1/namespaces/account")["aliases"]):
        assert time.monotonic() < deadline, api("GET", "/v1/namespaces/account")
        time.sleep(0.2)


def links(selector):
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(a => a.textContent)", selector)


def test_an_item_read_through_an_alias_path_and_an_alias_listing():
    ensure_accounts()
    # The alias path opens the item: its own path, the alias it was read through, its aliases.
    open_page("/ui/handle-ada")
    wait.until(lambda d: by_id("item").is_displayed() and by_id("item-own-path").text == "/account-1")
    assert by_id("node-path").text == "/handle-ada"
    assert by_id("item-alias").text.startswith("Read through the alias /handle-ada"), by_id("item-alias").text
    assert json.loads(by_id("value").text) == {"handle": "ada", "plan": "pro"}
    assert links("#item-aliases a") == ["/handle-ada", "/plan-pro/account-1"], links("#item-aliases a")
    assert not by_id("subtree").is_displayed()
    by_id("item-own-path").click()
    wait.until(lambda d: d.current_url.endswith("/ui/account-1"))
    wait.until(lambda d: by_id("node-path").text == "/account-1" and by_id("item").is_displayed())
    assert not by_id("item-alias").is_displayed()
    # A string id that reads as an integer is escaped in the alias the console computes (as the
    # server writes it), and the link reaches the item.
    open_page("/ui/account-3")
    wait.until(lambda d: links("#item-aliases a") == ["/handle-%1234", "/plan-pro/account-3"])
    driver.find_element(By.LINK_TEXT, "/handle-%1234").click()
    wait.until(lambda d: d.current_url.endswith("/ui/handle-%251234"))
    wait.until(lambda d: by_id("item-own-path").text == "/account-3")
    # A listing of an alias prefix: each entry's alias, and a link to its item's own path.
    open_page("/ui/plan-pro")
    wait.until(lambda d: children() == ["/plan-pro/account-1", "/plan-pro/account-3"])
    assert links("#children a.own") == ["/account-1", "/account-3"], links("#children a.own")
    assert not by_id("subtree").is_displayed()
    driver.find_element(By.CSS_SELECTOR, "#children a.own").click()
    wait.until(lambda d: d.current_url.endswith("/ui/account-1"))


def test_a_save_refused_for_an_alias_another_item_holds():
    ensure_accounts()
    editor = open_editor("account-2", {"handle": "grace", "plan": "free"})
    type_value(editor, {"handle": "ada", "plan": "free"})
    by_id("save").click()
    shown("editor-violations")
    message = by_id("editor-violations-message").text
    assert message.startswith("Not saved: handle ada is already used by /account-1"), message
    marked = driver.execute_script("return [...document.querySelectorAll('#editor-marks mark')].map(m => m.textContent)")
    assert marked == ['"handle": "ada"'], marked
    assert by_id("item-version").text == "1" and api("GET", "/v1/items/account-2")["version"] == 1
    # The holder is a link.
    driver.find_element(By.CSS_SELECTOR, "#editor-violations-message a.holder").click()
    wait.until(lambda d: d.current_url.endswith("/ui/account-1"))
    wait.until(lambda d: by_id("item").is_displayed() and '"ada"' in by_id("value").text)


def alias_build(template):
    """The template's entry on the definition's page, read at once (polls replace it)."""
    return driver.execute_script(
        "const li = [...document.querySelectorAll('#ns-alias-builds > li')].find(li => li.dataset.template === arguments[0]);"
        "return li && {state: li.dataset.state, checked: li.dataset.checked, text: li.innerText,"
        " conflicts: [...li.querySelectorAll('.alias-conflicts > li')].map(c => [c.dataset.alias,"
        " [...c.querySelectorAll('a')].map(a => a.textContent)])}", template)


def test_alias_templates_build_with_a_conflict_and_a_retry_on_the_namespaces_page():
    # 30 members in one group, two of them with one email: the unique template stops on them.
    n = 30
    ops = [{"op": "put", "path": f"/club-1/member-{i}",
            "value": {"email": f"m{i}@example.org", "status": "open" if i % 2 else "closed"}} for i in range(1, n + 1)]
    ops[1]["value"]["email"] = "m1@example.org"
    api("POST", "/v1/transact", {"ops": ops})
    email, status = "/memail-{email}", "/mstatus-{status}/member-{@member}"
    sign_in(ADMIN)
    open_page("/ui/.namespaces/member")
    shown("ns-new-note")
    # A template that is no key path: the dry run's 400, beside the templates.
    templates = by_id("ns-aliases-text")
    templates.send_keys("/x/y-{a}")
    by_id("ns-check").click()
    wait.until(lambda d: "must have an id" in by_id("ns-aliases-error").text)
    assert not by_id("ns-dry-run").is_displayed() and status_of("GET", "/v1/namespaces/member") == 404
    templates.clear()
    templates.send_keys(email + "\n" + status)
    by_id("ns-check").click()
    shown("ns-dry-run")
    assert not by_id("ns-aliases-error").is_displayed()
    assert [li.text.split(":")[0] for li in driver.find_elements(By.CSS_SELECTOR, "#ns-dry-run-aliases li")] == [
        "Adds " + email, "Adds " + status]
    by_id("ns-save").click()
    wait.until(lambda d: by_id("ns-version").text == "1")
    assert [a["path"] for a in api("GET", "/v1/namespaces/member")["aliases"]] == [email, status]
    # The builds go on in the background and the page follows them (as long as a slow machine,
    # or moto, needs): the conflict lists both members, linked.
    slow = WebDriverWait(driver, 120, poll_frequency=0.2)
    slow.until(lambda d: (alias_build(email) or {}).get("state") == "conflict"
               and (alias_build(status) or {}).get("state") == "ready")
    assert alias_build(email)["conflicts"] == [["/memail-m1@example.org", ["/club-1/member-1", "/club-1/member-2"]]], alias_build(email)
    assert f"{n} items checked, {n} aliases written" in alias_build(status)["text"], alias_build(status)
    # Fixed, then retried: it builds again from the beginning, and reaches ready with every member.
    api("PATCH", "/v1/items/club-1/member-2", {"email": "m2@example.org"}, content_type="application/merge-patch+json")
    driver.find_element(By.CSS_SELECTOR, "#ns-alias-builds > li[data-state=conflict] button.retry").click()
    slow.until(lambda d: (alias_build(email) or {}).get("state") == "ready")
    # (member-2's PATCH wrote its alias already: the build writes the others.)
    assert alias_build(email)["checked"] == str(n) and f"Ready: {n} items checked" in alias_build(email)["text"], alias_build(email)
    assert api("GET", "/v1/items/memail-m2@example.org")["path"] == "/club-1/member-2"
    # The list shows the templates and their states.
    by_id("nav-namespaces").click()
    shown("ns-list-view")
    wait.until(lambda d: d.execute_script(
        "return [...document.querySelectorAll('#ns-rows tr[data-namespace=member] .alias-summary')]"
        ".map(e => e.dataset.template + ' ' + e.dataset.state)") == [email + " ready", status + " ready"])
    sign_in(RW)


def test_read_only_token_sees_no_edit_controls():
    sign_in(RO)
    assert by_id("scope").text == "read-only token"
    open_page("/ui/user-7/post-1")
    shown("item")
    for control in ["edit", "delete", "create", "create-button", "subtree", "delete-subtree"]:
        assert not by_id(control).is_displayed(), control
    screenshot("read-only")
    sign_in(RW)
    open_page("/ui/user-7/post-1")
    shown("item")
    assert by_id("edit").is_displayed() and by_id("create").is_displayed()


LAYOUT_SHIFT = """
const done = arguments[arguments.length - 1];
let total = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) total += e.value;
}).observe({ type: "layout-shift", buffered: true });
setTimeout(() => done(total), 300);
"""


def test_no_layout_jumps_while_a_node_loads():
    # Cumulative Layout Shift (Chromium's layout-shift entries) of a full load, then of a click
    # on a child: shifts within 0.5 s of a click count as its answer, later ones as jumps.
    open_page("/ui/user-7/post-2")
    wait.until(lambda d: "second thoughts" in by_id("value").text)
    load = driver.execute_async_script(LAYOUT_SHIFT)
    before = rendered_at()
    driver.find_element(By.LINK_TEXT, "/user-7/post-2/comment-1").click()
    wait_rendered_after(before)
    wait.until(lambda d: '"text": "first!"' in by_id("value").text)
    time.sleep(0.6)
    both = driver.execute_async_script(LAYOUT_SHIFT)
    results["layout_shift_load"] = round(load, 4)
    results["layout_shift_navigation"] = round(both - load, 4)
    # 0.1 is the "good" threshold of Core Web Vitals; a page painted once scores about 0.
    assert load < 0.05 and both - load < 0.05, results


def test_readable_at_phone_width_without_horizontal_scrolling():
    set_viewport(PHONE)
    try:
        open_page("/ui/season-2026-spring/score-!2300")
        shown("key")
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if overflow > 0:
            driver.save_screenshot(f"{os.path.dirname(RESULTS)}/failed-phone-overflow.png")
            wide = driver.execute_script(
                "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
                " > document.documentElement.clientWidth + 1).slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)")
            raise AssertionError(f"{overflow}px wider than the screen: {wide}")
        screenshot("phone")
    finally:
        set_viewport(WIDE)


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]
# The access control, backups and filter tests live in access_test.py, backups_test.py and
# filters_test.py and use this file's driver and helpers: they import `console_test`, which is
# this module (run as a script, it is `__main__`).
sys.modules.setdefault("console_test", sys.modules[__name__])
import access_test  # noqa: E402
import backups_test  # noqa: E402
import filters_test  # noqa: E402

TESTS += access_test.TESTS + backups_test.TESTS + filters_test.TESTS
# CONSOLE_ONLY=WORD runs only the tests whose name holds WORD (for a quick run by hand; the
# numbers console.sh prints need the 10,000-children test).
if os.environ.get("CONSOLE_ONLY"):
    TESTS = [t for t in TESTS if os.environ["CONSOLE_ONLY"] in t.__name__]

if __name__ == "__main__":
    failed = 0
    started = time.monotonic()
    try:
        for test in TESTS:
            t0 = time.monotonic()
            try:
                test()
                print(f"ok   {test.__name__} ({time.monotonic() - t0:.1f} s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {test.__name__}", flush=True)
                traceback.print_exc()
                driver.save_screenshot(f"{os.path.dirname(RESULTS)}/failed-{test.__name__}.png")
    finally:
        driver.quit()
        shutil.rmtree(PROFILE, ignore_errors=True)
    results["tests"] = len(TESTS)
    results["failed"] = failed
    results["seconds"] = round(time.monotonic() - started, 1)
    with open(RESULTS, "w") as f:
        json.dump(results, f)
    print(f"{len(TESTS) - failed} passed, {failed} failed in {results['seconds']} s")
    sys.exit(1 if failed else 0)
