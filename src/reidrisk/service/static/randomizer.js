/*
 * reidrisk browser randomizer: randomizes a person's answers on their own device under a survey's
 * protocol (paper 004 Algorithm 1; reidrisk.collect.Protocol) and builds the report the service
 * accepts. Only the randomized cells leave the page; a skipped question stays missing.
 *
 * Mechanisms: "grr" (k-RR) and "subset" (paper 004 eq. 2-3: with probability p the report is the
 * true value plus h - 1 values drawn without replacement from the k - 1 others, otherwise h values
 * drawn from the others; cells are the codes in ascending order joined by "|"). Attribute
 * sampling: k attributes drawn uniformly among the present ones ("present") or among all ("all").
 *
 * Randomness: crypto.getRandomValues (Web Crypto) by default; a test passes its own source of
 * uint32 words. Integers are drawn by rejection (no modulo bias), uniforms from 53 random bits.
 */
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.ReidriskRandomizer = factory();
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  function cryptoWords() {
    var buf = new Uint32Array(64), pos = 64;
    return function () {
      if (pos === 64) { globalThis.crypto.getRandomValues(buf); pos = 0; }
      return buf[pos++];
    };
  }

  function uniform(words) { // [0, 1) with 53 random bits
    return ((words() >>> 5) * 67108864 + (words() >>> 6)) / 9007199254740992;
  }

  function integer(n, words) { // uniform on 0..n-1, n <= 2^32, by rejection
    var limit = 4294967296 - (4294967296 % n);
    for (;;) { var w = words(); if (w < limit) return w % n; }
  }

  function sample(pool, m, words) { // m distinct entries of pool (partial Fisher-Yates)
    var a = pool.slice();
    for (var i = 0; i < m; i++) {
      var j = i + integer(a.length - i, words), t = a[i]; a[i] = a[j]; a[j] = t;
    }
    return a.slice(0, m);
  }

  function probability(mech) { // P(the true value is in the report)
    var e = Math.exp(mech.epsilon);
    if (mech.mechanism === "grr") return e / (e + mech.k - 1);
    if (mech.mechanism === "subset") return e * mech.h / (mech.k - mech.h + e * mech.h);
    throw new Error("the browser form supports grr and subset, not " + mech.mechanism);
  }

  function randomizeValue(x, mech, words) { // one code -> one cell
    var h = mech.mechanism === "grr" ? 1 : mech.h, k = mech.k;
    var include = uniform(words) < probability(mech);
    var others = [];
    for (var v = 0; v < k; v++) if (v !== x) others.push(v);
    var chosen = sample(others, include ? h - 1 : h, words);
    if (include) chosen.push(x);
    chosen.sort(function (a, b) { return a - b; });
    return chosen.join("|");
  }

  function uuid4(words) {
    var b = [];
    for (var i = 0; i < 16; i++) b.push(words() & 255);
    b[6] = (b[6] & 15) | 64; b[8] = (b[8] & 63) | 128;
    var hex = b.map(function (x) { return (x + 256).toString(16).slice(1); }).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" +
      hex.slice(16, 20) + "-" + hex.slice(20);
  }

  /* config: GET /surveys/{id}/config; codes: {attribute: code or null (skipped)} */
  function randomizeRecord(config, codes, words) {
    words = words || cryptoWords();
    var attrs = config.attributes, g = attrs.length, proto = config.protocol;
    // attributes per person ("k" in configurations written before the field was renamed)
    var per = proto.attributes_per_person !== undefined ? proto.attributes_per_person : proto.k;
    var k = per === null || per === undefined ? g : Math.min(per, g);
    var present = [], pool = [];
    for (var j = 0; j < g; j++) {
      var c = codes[attrs[j].name];
      present.push(c !== null && c !== undefined);
      if (proto.among === "all" || present[j]) pool.push(j);
    }
    var chosen = k >= g ? pool : sample(pool, Math.min(k, pool.length), words);
    var values = {};
    chosen.forEach(function (j) {
      if (present[j]) values[attrs[j].name] = randomizeValue(codes[attrs[j].name], attrs[j].mechanism, words);
    });
    return { id: uuid4(words), values: values };
  }

  return { randomizeRecord: randomizeRecord, randomizeValue: randomizeValue,
           probability: probability, cryptoWords: cryptoWords, uuid4: uuid4 };
});
