"""The web console in a real headless browser (Debian's Chromium through its WebDriver, driven
by selenium), against a real `lucille serve` with a token: the token is asked for once, a
config is written in the editor, a validation error shows at its key, the fix starts a run whose
counts reach the end, its failures are listed, a slow run is cancelled, a schedule is created.

Screenshots of each page are written to LUCILLE_CONSOLE_SCREENSHOTS when it is set (the ones in
docs/images/ come from `LUCILLE_CONSOLE_SCREENSHOTS=docs/images pytest tests/python/test_console.py`)."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any, Callable

import pytest

from service_process import Service, write_stages
from services import service_env

TOKEN = "console-t0ken"


@pytest.fixture
def browser() -> Any:
    chromium = service_env("LUCILLE_TEST_CHROMIUM", "chromium.sh")
    driver_path = service_env("LUCILLE_TEST_CHROMEDRIVER", "chromium.sh")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service as DriverService
    except ImportError:
        pytest.fail("selenium is not installed (scripts/test.sh installs it)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait_for(what: Callable[[], Any], timeout: float = 60, message: str = "") -> Any:
    deadline = time.time() + timeout
    last: Any = None
    while time.time() < deadline:
        try:
            last = what()
            if last:
                return last
        except Exception as e:  # noqa: BLE001: an element not there yet
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message or what}: {last!r}")


def shot(driver: Any, name: str) -> None:
    folder = os.environ.get("LUCILLE_CONSOLE_SCREENSHOTS")
    if folder:
        pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(pathlib.Path(folder) / f"console-{name}.png"))


def config(docs: int, key: str = "staticValues", extra: str = "", out: str = "out.jsonl") -> str:
    """Paths relative to the service's working folder; the stages module on its PYTHONPATH."""
    return f"""connectors: [
  {{ name: "numbers", class: "SequenceConnector", numDocs: {docs}, docIdPrefix: "doc-", pipeline: "enrich" }}
]
pipelines: [
  {{ name: "enrich", stages: [
    {{ name: "mark", class: "SetStaticValues", {key}: {{ source: "console" }} }}
    {{ name: "check", class: "service_stages:Flaky", every: 10, fixed: "fixed.flag" }}
    {extra}
  ] }}
]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 2 }}
"""


def console_service(tmp_path: pathlib.Path) -> Service:
    """A `lucille serve` with a token, the test stages on its path, run from `tmp_path`."""
    write_stages(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    return Service(tmp_path / "data", "--token-file", str(token_file), token=TOKEN, cwd=tmp_path,
                   env={"PYTHONPATH": str(tmp_path)})


def test_the_console_end_to_end(tmp_path: pathlib.Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    with console_service(tmp_path) as svc:
        d = browser
        d.get(svc.url + "/")
        # The first API call is refused: the console asks for the token, once.
        dialog = wait_for(lambda: d.find_element(By.ID, "token-dialog").get_attribute("open") is not None
                          and d.find_element(By.ID, "token-dialog"), message="the token dialog")
        assert dialog.find_element(By.CSS_SELECTOR, "label[for=token-input]").text == "Token"
        d.find_element(By.ID, "token-input").send_keys(TOKEN)
        d.find_element(By.ID, "token-save").click()
        wait_for(lambda: "No runs yet" in d.find_element(By.ID, "runs-table").text, message="runs list")

        # A new run: the editor validates as it is typed; the error shows at its key path.
        d.find_element(By.ID, "nav-new").click()
        area = wait_for(lambda: d.find_element(By.ID, "new-config"))
        bad = config(200, key="staticValuez")
        d.execute_script("arguments[0].value = arguments[1];", area, bad[:-2])
        area.send_keys(bad[-2:])  # typed: the editor's input event fires
        problem = wait_for(lambda: [li for li in d.find_elements(By.CSS_SELECTOR, "#new-errors li")
                                    if "staticValuez" in li.text], message="the error at its key")[0]
        assert problem.get_attribute("data-path") == "pipelines[0].stages[0].staticValuez"
        assert 'did you mean "staticValues"?' in problem.text
        assert "line 6" in problem.text, problem.text  # the line the key is on
        assert "error" in d.find_element(By.ID, "new-status").text
        shot(d, "new-run")
        fixed = config(200)
        d.execute_script("arguments[0].value = arguments[1];", area, fixed[:-1])
        area.send_keys(fixed[-1:])
        wait_for(lambda: d.find_element(By.ID, "new-status").text == "The config is valid.",
                 message="the config valid")
        assert d.find_elements(By.CSS_SELECTOR, "#new-errors li") == []
        d.find_element(By.ID, "new-name").send_keys("numbers from the console")
        d.find_element(By.ID, "new-start").click()

        # Its page: counts reach the end, stages and failures are listed.
        wait_for(lambda: "#/runs/" in d.current_url, message="the run page")
        run_id = d.current_url.rsplit("/", 1)[1]
        # 20 documents FAILed and every connector completed: "partial", a badge of its own.
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "partial", message="partial")
        badge = d.find_element(By.ID, "run-state")
        assert "state-partial" in (badge.get_attribute("class") or "").split()
        colour = badge.value_of_css_property("background-color")
        # Neither the succeeded badge's green nor the failed one's red (style.css), nor none.
        assert colour not in {"rgba(226, 243, 232, 1)", "rgba(251, 229, 227, 1)",
                              "rgba(0, 0, 0, 0)"}, colour
        counts = {k: d.find_element(By.ID, f"count-{k}").text
                  for k in ("published", "succeeded", "failed", "dropped", "unchanged")}
        assert counts == {"published": "200", "succeeded": "180", "failed": "20", "dropped": "0",
                          "unchanged": "0"}
        assert counts == {k: str(v) for k, v in svc.run(run_id)["counts"].items()}
        stage_rows = d.find_elements(By.CSS_SELECTOR, "#run-stages tbody tr")
        assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in stage_rows] == ["mark", "check"]
        wait_for(lambda: d.find_element(By.ID, "failures-title").text == "Failures (20)", message="failures")
        failure_rows = d.find_elements(By.CSS_SELECTOR, "#run-failures tbody tr")
        assert len(failure_rows) == 20
        first = failure_rows[0].find_elements(By.TAG_NAME, "td")
        assert first[1].text == "check" and "stage \"check\" failed" in first[2].text
        reason = first[2].find_element(By.CLASS_NAME, "reason").get_attribute("title")
        assert "is not wanted" in reason, reason
        assert d.find_element(By.ID, "run-cancel").get_attribute("disabled") is not None
        assert d.find_element(By.ID, "run-replay").get_attribute("disabled") is None
        shot(d, "run")

        # Replay its failures from the page: a new run of exactly those 20 documents (they fail
        # again: the stage is not fixed), linked to the first.
        d.find_element(By.ID, "run-replay").click()
        wait_for(lambda: run_id not in d.current_url, message="the replay's page")
        replay_id = d.current_url.rsplit("/", 1)[1]
        # Every one of its documents FAILed again, but its connector completed: "partial".
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "partial", message="replayed")
        assert d.find_element(By.ID, "count-published").text == "20"
        assert d.find_element(By.ID, "count-failed").text == "20"
        assert f"replay of {run_id}" in d.find_element(By.ID, "run-times").text
        assert svc.run(replay_id)["replayOf"] == run_id

        # A slow run, cancelled from its page.
        slow = config(3000, extra='{ class: "service_stages:Slow", seconds: 0.02 }',
                      out="slow.jsonl") + "publisher { queueCapacity: 20 }\n"
        slow_id = svc.submit(slow, name="slow")
        d.get(f"{svc.url}/#/runs/{slow_id}")
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "running", message="running")
        wait_for(lambda: int(d.find_element(By.ID, "count-succeeded").text.replace(",", "")) > 0,
                 message="counts moving")
        shot(d, "run-live")
        d.find_element(By.ID, "run-cancel").click()
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "cancelled", message="cancelled")
        assert "drains" in d.find_element(By.ID, "run-action").text

        # The runs list.
        d.find_element(By.ID, "nav-runs").click()
        wait_for(lambda: len(d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr a")) == 3, message="3 runs")
        names = [a.text for a in d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr a")]
        assert names == ["slow", "replay of numbers from the console", "numbers from the console"]
        shot(d, "runs")

        # Schedules: one created from the form.
        d.find_element(By.ID, "nav-schedules").click()
        wait_for(lambda: "No schedules" in d.find_element(By.ID, "schedules-table").text, message="schedules")
        d.find_element(By.ID, "sched-name").send_keys("hourly numbers")
        d.find_element(By.ID, "sched-cron").send_keys("0 * * * *")
        d.execute_script("arguments[0].value = arguments[1];", d.find_element(By.ID, "sched-config"),
                         config(10, out="hourly.jsonl"))
        d.find_element(By.ID, "sched-create").click()
        wait_for(lambda: "hourly numbers" in d.find_element(By.ID, "schedules-table").text, message="the schedule")
        assert "cron 0 * * * *" in d.find_element(By.ID, "schedules-table").text
        assert [s["name"] for s in svc.ok("GET", "/api/schedules")["schedules"]] == ["hourly numbers"]
        shot(d, "schedules")

        # Everything the page loaded came from this server: no CDN, nothing else fetched.
        urls = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert urls and all(u.startswith(svc.url) for u in urls), urls
        logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE" and "401" not in e["message"]]
        assert logs == [], logs


MIN_GAP = 0.25  # app.js's: samples closer together are merged


def throughput(points: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """What the run page's chart plots, from the timeline: for each connector, the documents
    that reached their end ("done": succeeded + failed + dropped) and those it published, per
    second between its samples (from t = 0), at each interval's end; a sample closer than
    MIN_GAP to the last one kept is skipped, except the last, which replaces that one."""
    by: dict[str, list[tuple[float, int, int]]] = {}
    for p in points:
        by.setdefault(p["connector"], []).append(
            (p["t"], p["succeeded"] + p["failed"] + p["dropped"], p["published"]))
    out = {}
    for name, samples in by.items():
        kept = [(0.0, 0, 0)]
        for i, sample in enumerate(samples):
            if sample[0] - kept[-1][0] < MIN_GAP:
                if i != len(samples) - 1:
                    continue
                if len(kept) > 1:
                    kept.pop()
                if sample[0] - kept[-1][0] <= 0:
                    continue
            kept.append(sample)
        for kind, k in (("done", 1), ("published", 2)):
            out[(name, kind)] = [(b[0], (b[k] - a[k]) / (b[0] - a[0])) for a, b in zip(kept, kept[1:])]
    return out


def test_the_run_charts_and_the_search_page(tmp_path: pathlib.Path, browser: Any) -> None:
    import json
    import urllib.parse

    from selenium.webdriver.common.by import By

    topics = ["rust", "python", "search", "index"]
    kinds = ["guide", "reference", "tutorial", "talk"]
    with open(tmp_path / "library.jsonl", "w") as f:
        for i in range(600):
            topic = topics[i % 4]
            f.write(json.dumps({"id": f"r{i:03}", "title": f"{topic.title()} notes {i}",
                                "kind": kinds[(i // 4) % 4],
                                "body": f"A page about {topic} and more: entry {i} of the library."}) + "\n")
    conf = """connectors: [
  { name: "library", class: "FileConnector", paths: ["library.jsonl"], pipeline: "p",
    fileHandlers { jsonl { idField: "id" } } }
]
pipelines: [ { name: "p", stages: [
  { name: "mark", class: "SetStaticValues", staticValues: { source: "console" } }
  { name: "pause", class: "service_stages:Slow", seconds: 0.02 }
] } ]
indexer { type: "tantivy", batchSize: 50 }
tantivy { path: "shelf/library" }
worker { threads: 2 }
publisher { queueCapacity: 20 }
"""
    with console_service(tmp_path) as svc:
        d = browser
        d.get(svc.url + "/")
        wait_for(lambda: d.find_element(By.ID, "token-dialog").get_attribute("open") is not None,
                 message="the token dialog")
        d.find_element(By.ID, "token-input").send_keys(TOKEN)
        d.find_element(By.ID, "token-save").click()
        wait_for(lambda: "No runs yet" in d.find_element(By.ID, "runs-table").text, message="runs list")

        # The run page while the run goes: the chart draws and redraws from the timeline.
        run_id = svc.submit(conf, name="library")
        d.get(f"{svc.url}/#/runs/{run_id}")
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "running", message="running")
        def points() -> list[Any]:
            return list(d.find_elements(By.CSS_SELECTOR, "#throughput .point"))

        wait_for(lambda: len(points()) >= 1 and d.find_element(By.ID, "throughput-note").text == "(live)",
                 message="a live point")
        assert "appear when the run ends" in d.find_element(By.ID, "stage-bars").text
        seen = len(points())
        wait_for(lambda: len(points()) > seen or d.find_element(By.ID, "run-state").text != "running",
                 message="the chart redrawn")
        assert len(points()) > seen, "the chart grew while the run went"
        shot(d, "run-charts-live")

        # At its end: the points are the API's numbers, the bars each stage's time.
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "succeeded", timeout=120, message="done")
        wait_for(lambda: d.find_element(By.ID, "throughput-note").text == "", message="the final chart")
        timeline = svc.ok("GET", f"/api/runs/{run_id}/timeline")["points"]
        expected = throughput(timeline)
        drawn: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for c in points():
            g = c.find_element(By.XPATH, "..")
            drawn.setdefault((g.get_attribute("data-connector"), g.get_attribute("data-kind")), []).append(
                (float(c.get_attribute("data-t")), float(c.get_attribute("data-rate"))))
        assert drawn.keys() == expected.keys() == {("library", "done"), ("library", "published")}
        for key in expected:
            assert len(drawn[key]) == len(expected[key]) >= 2, (key, drawn, timeline)
            for (t, rate), (et, erate) in zip(drawn[key], expected[key]):
                assert t == pytest.approx(et) and rate == pytest.approx(erate), (key, drawn, expected)
        # Every published document is counted once in each line.
        for kind in ("done", "published"):
            intervals = zip([0.0] + [t for t, _ in expected[("library", kind)]], expected[("library", kind)])
            assert sum(r * (t - t0) for t0, (t, r) in intervals) == pytest.approx(600)
        legend = d.find_element(By.ID, "throughput-legend").text
        assert legend == "library finished (solid), published (dashed)"
        run = svc.run(run_id)
        bars = d.find_elements(By.CSS_SELECTOR, "#stage-bars .stage-bar")
        assert [b.get_attribute("data-stage") for b in bars] == [s["name"] for s in run["stages"]] == [
            "mark", "pause"]
        seconds = [float(b.get_attribute("data-seconds")) for b in bars]
        assert seconds == pytest.approx([s["seconds"] for s in run["stages"]])
        widths = [float(b.find_element(By.TAG_NAME, "rect").get_attribute("width")) for b in bars]
        assert widths[0] / widths[1] == pytest.approx(seconds[0] / seconds[1], rel=1e-3, abs=0.01)
        assert "pause" in bars[1].text and "%" in bars[1].text
        shot(d, "run-charts")

        # The search page: the index the run wrote, by name.
        d.find_element(By.ID, "nav-search").click()
        wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#search-index option"), message="indexes")
        options = [o.text for o in d.find_elements(By.CSS_SELECTOR, "#search-index option")]
        assert options == ["library (600 documents)"]
        d.find_element(By.ID, "search-q").send_keys("rust")
        d.find_element(By.ID, "search-facet").send_keys("kind")
        d.find_element(By.ID, "search-go").click()

        def api(q: str, offset: int = 0) -> Any:
            query = urllib.parse.urlencode({"q": q, "limit": 10, "offset": offset, "facet": "kind"})
            return svc.ok("GET", f"/api/indexes/library/search?{query}")

        def hit_ids() -> list[str]:
            return [h.get_attribute("data-id") for h in d.find_elements(By.CSS_SELECTOR, "#search-hits .hit")]

        page = api("rust")
        assert page["total"] == 150
        wait_for(lambda: d.find_element(By.ID, "search-total").text == "150 matches", message="the matches")
        assert hit_ids() == [h["id"] for h in page["hits"]]
        first = d.find_element(By.CSS_SELECTOR, "#search-hits .hit")
        marked = [b.text for b in first.find_elements(By.CSS_SELECTOR, ".snippet b")]
        assert marked and all(m.lower() == "rust" for m in marked), marked
        assert "kind" in first.find_element(By.CSS_SELECTOR, ".fields").text
        facets = [(li.find_element(By.TAG_NAME, "a").text, li.find_element(By.CLASS_NAME, "count").text)
                  for li in d.find_elements(By.CSS_SELECTOR, "#search-facet-values li")]
        assert facets == [(f["value"], str(f["count"])) for f in page["facets"]["kind"]]
        assert d.find_element(By.ID, "search-page").text == "1–10 of 150"
        shot(d, "search")

        # Paging.
        d.find_element(By.ID, "search-next").click()
        second = api("rust", 10)
        wait_for(lambda: hit_ids() == [h["id"] for h in second["hits"]], message="page 2")
        assert d.find_element(By.ID, "search-page").text == "11–20 of 150"
        assert d.find_element(By.ID, "search-prev").get_attribute("disabled") is None

        # A facet value narrows the query.
        value, count = facets[0]
        d.find_element(By.CSS_SELECTOR, "#search-facet-values li a").click()
        wait_for(lambda: d.find_element(By.ID, "search-total").text == f"{count} matches",
                 message="the narrowed query")
        assert d.find_element(By.ID, "search-q").get_attribute("value") == f'(rust) AND kind:"{value}"'

        # A query error is shown at its character.
        box = d.find_element(By.ID, "search-q")
        box.clear()
        box.send_keys("title:(rust AND")
        d.find_element(By.ID, "search-go").click()
        wait_for(lambda: d.find_element(By.ID, "search-error").is_displayed(), message="the error")
        status, err = svc.call("GET", "/api/indexes/library/search?" + urllib.parse.urlencode(
            {"q": "title:(rust AND"}))
        assert status == 400
        where = d.find_element(By.ID, "search-error-where")
        assert where.get_attribute("data-position") == str(err["position"])
        assert f"character {err['position']}" in where.text
        assert d.find_element(By.ID, "search-error-text").text == err["error"]
        assert d.find_element(By.ID, "search-q").get_attribute("aria-invalid") == "true"
        shot(d, "search-error")

        urls = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert urls and all(u.startswith(svc.url) for u in urls), urls
        logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE" and "401" not in e["message"]
                and "400" not in e["message"]]
        assert logs == [], logs
