"""Browser test of the Backups page: an admin takes a backup (the file the browser saves is
checked) and reads the archive's status; a token that may not administer sees neither. It runs
after console_test.py's own tests, with its driver and helpers (one Chromium for all files).

scripts/console.sh starts the embedded backend's server with `--archive DIR`: there the page
shows the archive (and a new commit reaches it without a click, by the 5 s refresh). The
DynamoDB backend keeps no archive: there the page says how to turn one on.
"""

import os
import re
import shutil
import tempfile
import time
from datetime import datetime, timedelta, timezone

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_test import ADMIN, RO, RW, URL, api, by_id, driver, open_page, screenshot, shown, wait

TOKEN_KEY = "pathdb.token"  # where the console keeps its token (app.js)
# A zone east of UTC for the page's local times, so that the test tells them from the UTC ones.
ZONE = "Asia/Tokyo"  # UTC+9 all year
ZONE_OFFSET = timedelta(hours=9)


def archive_panel():
    return driver.execute_script(
        "const p = document.getElementById('archive-panel');"
        "return {enabled: p.dataset.enabled, lastCommit: p.dataset.lastCommit, reads: p.dataset.reads}")


def times(dd):
    """The <time>s of a field, each as (instant in microseconds, its text), checked: the text is
    the instant as local time in ZONE, then as UTC."""
    out = []
    for t in by_id(dd).find_elements(By.TAG_NAME, "time"):
        utc = datetime.fromisoformat(t.get_attribute("datetime").replace("Z", "+00:00"))
        local = (utc + ZONE_OFFSET).strftime("%Y-%m-%d %H:%M:%S")
        assert t.text == f"{local} {ZONE} ({utc.strftime('%Y-%m-%d %H:%M:%S')} UTC)", (dd, t.text)
        out.append((int(utc.timestamp() * 1e6), t.text))
    return out


def same_second(a, b):
    return a // 1_000_000 == b // 1_000_000


def use_token(token, path):
    """Opens `path` signed in with `token` (the sign-in form is another test's: skipping it and
    the groups page it opens keeps this test short on moto)."""
    driver.get(URL + "/ui/.console/style.css")  # this origin, without running the console
    driver.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", TOKEN_KEY, token)
    open_page(path)


def downloaded(directory, name):
    path = os.path.join(directory, name)
    if os.path.exists(path) and not os.path.exists(path + ".crdownload"):
        return path
    return None


# Replaces the page's fetch: /v1/archive answers a failing archive, and /v1/backup breaks off
# after 8 bytes (window.fakeBackup = "cut") or is refused ("forbidden"). A navigation undoes it.
FAKE_FETCH = """
const now = arguments[0];
const real = window.fetch;
window.fetch = (url, options) => {
  if (url === "/v1/archive") return Promise.resolve(new Response(JSON.stringify({
    enabled: true, target: "s3://bucket/pathdb", last_commit: 120, archived_commit: 100,
    lag_commits: 20, lag_seconds: 42.5, last_base: {commit: 90, taken_at: now - 3600e6}, failures: 3,
    error: "PUT segments/00000101: 503 SlowDown", window: {from: now - 3600e6, to: now - 60e6},
    restorable_commit: 95, bases: 2, segments: 7, gaps: [[96, 99], [101, 101]]}),
    {headers: {"Content-Type": "application/json"}}));
  if (url === "/v1/backup" && window.fakeBackup === "forbidden") return Promise.resolve(new Response(JSON.stringify(
    {error: {code: "forbidden", message: "this needs a token that may administer the database (admin on /**)",
             operation: "admin"}}), {status: 403, headers: {"Content-Type": "application/json"}}));
  let sent = false;
  if (url === "/v1/backup") return Promise.resolve(new Response(new ReadableStream({
    pull(c) { if (sent) c.error(new TypeError("network error")); else { sent = true; c.enqueue(new TextEncoder().encode("PDBBKUP1")); } }
  }), {headers: {"Content-Disposition": 'attachment; filename="pathdb-1.pdbbackup"'}}));
  return real(url, options);
};
"""


# The page's timers of 5 s (the archive's refresh) run in 0.1 s; each delay asked for is kept.
FAST_TIMERS = """
window.timerDelays = [];
window.realSetTimeout = window.setTimeout;
window.setTimeout = (f, ms, ...rest) => {
  window.timerDelays.push(ms);
  return window.realSetTimeout(f, ms === 5000 ? 100 : ms, ...rest);
};
"""


def test_backups_page_takes_a_backup_and_shows_the_archive():
    status = api("GET", "/v1/archive", token=ADMIN)
    downloads = tempfile.mkdtemp(prefix="pathdb-downloads-")
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ZONE})
    try:
        use_token(ADMIN, "/ui/.namespaces")
        by_id("nav-backups").click()
        wait.until(lambda d: d.current_url.endswith("/ui/.backups"))
        shown("backups-page")
        wait.until(lambda d: archive_panel()["enabled"] is not None)
        assert by_id("nav-backups").get_attribute("aria-current") == "page"
        assert archive_panel()["enabled"] == str(status["enabled"]).lower(), (archive_panel(), status)
        if status["enabled"]:
            shown("archive-on")
            assert not by_id("archive-off").is_displayed()
            assert by_id("archive-target").text == status["target"]
            # The window's start and the base backup do not move while the test runs.
            now = api("GET", "/v1/archive", token=ADMIN)
            assert now["window"] and now["last_base"] and now["restorable_commit"] is not None, now
            window = times("archive-window")
            assert len(window) == 2 and same_second(window[0][0], now["window"]["from"]), (window, now)
            assert window[0][0] <= window[1][0], window
            assert by_id("archive-window").text.startswith("from " + window[0][1] + "\nto " + window[1][1]), \
                by_id("archive-window").text
            base = times("archive-base")
            assert len(base) == 1 and same_second(base[0][0], now["last_base"]["taken_at"]), (base, now)
            assert by_id("archive-base").text.startswith(f"commit {now['last_base']['commit']}, taken ")
            assert re.fullmatch(r"commit \d+ \((the database's last commit|the database is at commit \d+)\)",
                                by_id("archive-restorable").text), by_id("archive-restorable").text
            assert re.fullmatch(r"none: every commit is in the target|[\d,]+ commits?, \d+\.\d s \(not yet in the target\)",
                                by_id("archive-lag").text), by_id("archive-lag").text
            assert by_id("archive-failures").text == "none since the server started"
            assert re.fullmatch(r"[\d,]+ base backups?, [\d,]+ segments?", by_id("archive-contents").text)
            assert not by_id("archive-error").is_displayed() and not by_id("archive-gaps").is_displayed()
        else:
            text = shown("archive-off").text
            assert "The continuous archive is off" in text and "pathdb serve --archive DIR" in text, text
            assert not by_id("archive-on").is_displayed()

        # Take a backup: the file the browser saved is the whole stream, a backup file.
        by_id("backup-take").click()
        slow = WebDriverWait(driver, 60, poll_frequency=0.05)
        slow.until(lambda d: by_id("backup-progress").get_attribute("data-file")
                   or by_id("backup-error").is_displayed())
        assert not by_id("backup-error").is_displayed(), by_id("backup-error").text
        name = by_id("backup-progress").get_attribute("data-file")
        size = int(by_id("backup-progress").get_attribute("data-bytes"))
        assert re.fullmatch(r"pathdb-\d+\.pdbbackup", name), name
        assert by_id("backup-progress").text.startswith(f"Saved {name}: "), by_id("backup-progress").text
        path = slow.until(lambda d: downloaded(downloads, name))
        slow.until(lambda d: os.path.getsize(path) == size)
        with open(path, "rb") as f:
            assert f.read(8) == b"PDBBKUP1"
        assert size > 1000, size
        screenshot("backups")

        # Refresh reads at once; then the page reads again by itself, every 5 s (made 0.1 s here,
        # to keep the test short): a new commit shows without a click.
        api("PUT", "/v1/items/backup-1", {"n": 1})
        commit = api("GET", "/v1/archive", token=ADMIN)["last_commit"]
        reads = int(archive_panel()["reads"])
        driver.execute_script(FAST_TIMERS)
        by_id("archive-refresh").click()
        wait.until(lambda d: int(archive_panel()["reads"]) >= reads + 3)
        driver.execute_script("window.setTimeout = window.realSetTimeout")
        assert 5000 in driver.execute_script("return window.timerDelays"), driver.execute_script("return window.timerDelays")
        # (At least: a background write, such as an expiry, may have committed since.)
        assert int(archive_panel()["lastCommit"]) >= (commit if status["enabled"] else 0), (archive_panel(), commit)

        # Failures, as the page shows them (answers made up in the page: a server's archive fails
        # rarely on demand): the archive's error and its gaps highlighted, and a backup whose
        # stream breaks off, or that is refused, says so and saves nothing.
        driver.execute_script(FAKE_FETCH, int(time.time() * 1e6))
        by_id("archive-refresh").click()
        shown("archive-error")
        assert by_id("archive-error").text == "The archive is failing: PUT segments/00000101: 503 SlowDown", \
            by_id("archive-error").text
        assert shown("archive-gaps").text.startswith("Gaps in the archive: a restore stops before each.")
        gaps = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#archive-gap-list li")]
        assert gaps == ["commits 96 to 99 missing", "commit 101 missing"], gaps
        assert by_id("archive-failures").text == "3 since the server started"
        assert "alarm" in by_id("archive-failures").get_attribute("class")
        assert by_id("archive-lag").text == "20 commits, 42.5 s (not yet in the target)", by_id("archive-lag").text
        assert by_id("archive-restorable").text == "commit 95 (the database is at commit 120)"
        for answer, wanted in [("cut", "No backup: the stream stopped after 8 bytes ("),
                               ("forbidden", "No backup: This token may not administer the database (that needs admin on /**).")]:
            driver.execute_script("window.fakeBackup = arguments[0]", answer)
            by_id("backup-take").click()
            error = shown("backup-error").text
            assert error.startswith(wanted), error
            assert by_id("backup-progress").get_attribute("data-file") is None
    finally:
        driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})
        shutil.rmtree(downloads, ignore_errors=True)

    # A token that may not administer: no link, and the page says why in a sentence.
    use_token(RO, "/ui/.backups")
    assert not by_id("nav-backups").is_displayed()
    message = shown("error").text
    assert "This token may not administer the database" in message and "{\"" not in message, message
    assert by_id("backups-denied").is_displayed() and not by_id("backups-panels").is_displayed()
    assert not by_id("backup-take").is_displayed()
    driver.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", TOKEN_KEY, RW)


TESTS = [test_backups_page_takes_a_backup_and_shows_the_archive]
