// The site's search worker: Material's own worker, loaded unchanged by importScripts below (the hook
// names its file in ?material=), with two fixes around it. It sits in Material's worker folder, where
// Material's worker finds its language files (../lunr/).
//
// 1. Chinese queries. The index is cut into words by jieba at build time (words joined by U+200B).
//    Material cuts a query's run of Han characters with the words of its index, but its loop never
//    tries a word that ends on the run's last character (`for (j = i + 1; j < query.length; j++)`
//    in segment()), so 算子融合 was searched as 算子 alone and 自动调优 as 调*. Here each run is
//    first cut into the index's words (longest first), and each word goes on with one more Han
//    character (〇) after it: Material's loop stops just before that character, so it finds the
//    whole word and drops the 〇. Runs it cannot cut go on as they were typed.
// 2. Result links. A page whose sections match but whose own text does not comes back with no matched
//    terms, and Material gave its link an empty ?h= (nothing highlighted on the page). It gets the
//    terms matched in its sections.
//    Results also leave the worker without the index's U+200B word breaks (invisible, but they
//    came along when a reader copied a result's title).
// 3. Words with digits. lunr 2.3.9 merges equal nodes of its token set by a key, TokenSet#toString,
//    that writes each edge's character and its target node's id with nothing between them. With digit
//    edges the key is ambiguous (edges 1->12, 3->4 and 1->1, 2->34 both give "011234"), two different
//    nodes are merged, and the token set then holds words that are not in the index: on 2026-12-05 an
//    edit of the oneAPI page (new words, so other node ids; the colliding one was an unchanged "111.6")
//    made every English search fail ("Cannot read properties of undefined (reading '_index')", the
//    symptom of lunr.js issue #503). The key here closes each id with a comma, which the site's
//    separator never leaves inside a word; tests/test_browser.py searches both languages.
(function () {
  "use strict";
  var QUERY = 2, RESULT = 3;              // Material's SearchMessageType
  var material = new URL(self.location.href).searchParams.get("material") || "";
  if (!/^search\.[0-9a-f]+\.min\.js$/.test(material)) throw new Error("site-search.js: ?material= names no worker");

  var words = null;                       // lunr's inverted index: its keys are the index's words
  var HAN = /\p{sc=Han}+/gu, PAD = "\u3007", LONGEST = 12, ZWSP = /\u200b/g;

  function cut(run) {
    var out = [], stray = "";
    for (var i = 0; i < run.length;) {
      var n = Math.min(LONGEST, run.length - i);
      while (n > 1 && !(run.slice(i, i + n) in words)) n--;
      var word = run.slice(i, i + n);
      if (word in words) {
        if (stray) out.push(stray);
        stray = "";
        out.push(word + PAD);
      } else {
        stray += word;
      }
      i += n;
    }
    if (stray) out.push(stray);
    return out.join(" ");
  }

  function query(text) {
    return words ? text.replace(HAN, cut) : text;
  }

  function fill(result) {
    (result && result.items || []).forEach(function (group) {
      var found = {};
      group.forEach(function (doc) {
        for (var term in doc.terms || {}) if (doc.terms[term]) found[term] = true;
      });
      group.forEach(function (doc) {
        if (doc.terms && !Object.keys(doc.terms).length) doc.terms = Object.assign({}, found);
        // the index's word breaks are for lunr only: a reader who copies a result's title or text
        // must not get them
        if (typeof doc.title === "string") doc.title = doc.title.replace(ZWSP, "");
        if (typeof doc.text === "string") doc.text = doc.text.replace(ZWSP, "");
      });
    });
  }

  // Material's worker listens for messages and answers with postMessage: both are wrapped before it loads.
  var listen = self.addEventListener;
  self.addEventListener = function (type, handler, options) {
    if (type === "message") {
      var inner = handler;
      handler = function (ev) {
        var m = ev.data;
        if (m && m.type === QUERY && typeof m.data === "string") m = { type: QUERY, data: query(m.data) };
        return inner.call(this, { data: m });
      };
    }
    return listen.call(self, type, handler, options);
  };
  var post = self.postMessage;
  self.postMessage = function (m) {
    if (m && m.type === RESULT) fill(m.data);
    return post.apply(self, arguments);
  };

  importScripts(material);

  self.lunr.TokenSet.prototype.toString = function () {
    if (this._str) return this._str;                   // set by the builder once a node is minimized
    var key = this.final ? "1" : "0", labels = Object.keys(this.edges).sort();
    for (var i = 0; i < labels.length; i++) key += labels[i] + this.edges[labels[i]].id + ",";
    return key;
  };

  // Material builds its lunr index on the SETUP message: keep the words of the index it builds.
  var build = self.lunr.Builder.prototype.build;
  self.lunr.Builder.prototype.build = function () {
    var index = build.apply(this, arguments);
    words = index.invertedIndex;
    return index;
  };
})();
