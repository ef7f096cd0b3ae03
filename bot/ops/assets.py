"""The dashboard's one script and one stylesheet (no build step, no dependencies).

The script does three small things: it appends live events from the server-sent
event stream (`/events/stream`, as text nodes: nothing from an event is parsed as
HTML), keeps "5m ago" times fresh, and shows exact times on hover.
"""

SCRIPT = r"""
"use strict";
(function () {
  function ago(ts) {
    var s = Math.floor(Date.now() / 1000 - ts);
    if (s < 0) return "in " + span(-s);
    return span(s) + " ago";
  }
  function span(s) {
    if (s >= 86400) return Math.floor(s / 86400) + "d";
    if (s >= 3600) return Math.floor(s / 3600) + "h";
    if (s >= 60) return Math.floor(s / 60) + "m";
    return s + "s";
  }
  function refreshTimes() {
    document.querySelectorAll("time[data-ts]").forEach(function (t) {
      var ts = parseFloat(t.dataset.ts);
      t.textContent = ago(ts);
      t.title = new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
    });
  }
  function eventItem(e) {
    var li = document.createElement("li");
    var time = document.createElement("time");
    time.dataset.ts = String(e.ts);
    var type = document.createElement("b");
    type.textContent = e.type;
    var agent = document.createElement("span");
    agent.className = "agent";
    agent.textContent = e.agent || "";
    var data = document.createElement("span");
    data.className = "what";
    data.textContent = e.data;
    li.append(time, " ", type, " ", agent, " ", data);
    li.className = "live";
    return li;
  }
  function live() {
    var list = document.getElementById("live-events");
    if (!list || !window.EventSource) return;
    var source = new EventSource("/events/stream");
    var status = document.getElementById("live-status");
    source.onopen = function () { if (status) status.textContent = "live"; };
    source.onerror = function () { if (status) status.textContent = "reconnecting"; };
    source.onmessage = function (m) {
      list.prepend(eventItem(JSON.parse(m.data)));
      while (list.children.length > 200) list.lastElementChild.remove();
      refreshTimes();
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    refreshTimes();
    setInterval(refreshTimes, 5000);
    live();
  });
})();
"""

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { display: flex; gap: 2em; align-items: baseline; padding: .6em 1.5em;
  background: #1d232a; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; white-space: nowrap; }
header nav { display: flex; flex: 1; align-items: baseline; gap: 1em; flex-wrap: wrap; }
header a { color: #cfe3ff; }
main { padding: 1em 1.5em; display: grid; gap: 1em;
  grid-template-columns: repeat(auto-fit, minmax(min(100%, 36em), 1fr)); }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: .6em 1em;
  overflow-x: auto; grid-column: 1 / -1; min-width: 0; }
section.half { grid-column: auto; }
h2 { font-size: 1em; margin: .2em 0 .6em; } h3 { font-size: .95em; margin: .8em 0 .4em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25em .8em .25em 0; border-bottom: 1px solid #eef0f3;
  vertical-align: top; overflow-wrap: normal; word-break: normal; hyphens: manual; }
th { white-space: nowrap; font-weight: 600; color: #4a5561; }
td { white-space: normal; }
.id { overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: 12px;
  color: #4a5561; }
time, .state, button { white-space: nowrap; }
.state.up { color: #1d7a35; } .state.down { color: #b3261e; font-weight: 600; }
.empty { color: #6b7580; }
.banner { background: #ffe2e0; color: #8a1c12; padding: .6em 1.5em; font-weight: 600; }
.flash { padding: .6em 1.5em; font-weight: 600; }
.flash.ok { background: #e3f6e8; color: #14532d; }
.flash.error { background: #ffe2e0; color: #8a1c12; }
.pager { margin-top: .5em; display: flex; gap: 1em; }
#live-events, .events { list-style: none; padding: 0; margin: 0; font-size: 13px; }
#live-events li, .events li { padding: .15em 0; border-bottom: 1px solid #f0f2f4; }
#live-events li.live { background: #f2fbf4; }
li.run summary { cursor: pointer; }
li.run ul.events { margin-left: 1.5em; }
.what { color: #4a5561; }
.agent, .who { color: #2d5fa8; font-weight: 600; }
.msg { border-left: 3px solid #dde1e6; padding: .2em .8em; margin: .5em 0; }
.msg.user { border-color: #7aa7e0; } .msg.assistant { border-color: #7cc48d; }
.waiting { background: #fff7e0; border: 1px solid #f0d58a; border-radius: 4px;
  padding: .4em .8em; margin: .5em 0; }
.said { margin: .2em 0; white-space: pre-wrap; overflow-wrap: break-word; }
details { margin: .2em 0; color: #6b7580; font-size: 13px; }
details.confirm { margin: 0; } details.confirm summary { cursor: pointer; white-space: nowrap; }
details pre { white-space: pre-wrap; overflow-wrap: break-word; margin: .2em 0 .2em 1em;
  font: inherit; }
details.tool summary { color: #7a4fb0; }
form.login { max-width: 24em; margin: 4em auto; background: #fff; padding: 1.5em;
  border: 1px solid #dde1e6; border-radius: 6px; display: grid; gap: .6em;
  grid-column: 1 / -1; }
form.login input { width: 100%; box-sizing: border-box; }
.error { color: #b3261e; }
form.act { display: inline-flex; gap: .3em; margin: 0 .3em .2em 0; align-items: flex-start; }
form.act textarea { min-width: 12em; }
header form.act { margin-left: auto; }
form.search { display: flex; gap: .5em; flex-wrap: wrap; margin-bottom: .6em; }
form.search input[type=search] { min-width: 24em; }
.charts { display: grid; gap: 1em; grid-template-columns: repeat(auto-fit, minmax(20em, 1fr)); }
figure.chart { margin: 0; } figure.chart svg { width: 100%; height: auto; }
figure.chart figcaption { font-size: 12px; color: #6b7580; }
"""
