/* dpcompanion: an explorer of the noise schedules of Hong, Wang & Zhou (FAccT 2022), Sec. 4.1-4.2.

   Plain JavaScript, no library, no network. It renders into every <div class="dpc-explorer">
   of the page (dpcompanion.book.explorer writes the container): sliders for epsilon, delta, T,
   kappa, N and beta; the uniform and the dynamic noise schedules sigma_t drawn in SVG; the
   numbers of Thm 4.1-4.4 (and, for momentum, of Thm 4.5-4.7) beside the plot.

   The formulas are the library's, ported one by one (each function names the one it ports):
   dpcompanion.theory.accounting, dpcompanion.theory.schedules, dpcompanion.theory.bounds.gd and
   dpcompanion.theory.bounds.momentum stay the one source; tests/test_explorer.py compares
   window.dpcExplorer.compute() with them. Where the library raises ValueError, compute()
   gives null for that number and the reason under errors[key]. */
(function () {
  "use strict";

  // ------------------------------------------------------------------ the library's formulas

  var LOG_LIMIT = 700.0;        // schedules._LOG_LIMIT
  var T_CAP = 20000000;         // bounds.gd._T_CAP
  var MAX_STEPS = 10000000;     // core.validate.MAX_STEPS
  var T_HAT_MAX = 5000000;      // bounds.momentum.T_hat's refusal

  function LibraryError(message) { this.name = "LibraryError"; this.message = message; }
  LibraryError.prototype = Object.create(Error.prototype);
  function refuse(message) { throw new LibraryError(message); }

  function checkPositive(name, v) {
    if (!(typeof v === "number" && isFinite(v) && v > 0)) refuse(name + " must be a finite number > 0, got " + v);
    return v;
  }
  function checkUnit(name, v) {   // validate.unit_interval: (0, 1)
    if (!(typeof v === "number" && v > 0 && v < 1)) refuse(name + " must be in (0, 1), got " + v);
    return v;
  }
  function checkKappa(v) {         // validate.kappa
    if (!(typeof v === "number" && isFinite(v) && v >= 1)) refuse("kappa must be a finite number >= 1, got " + v);
    return v;
  }
  function checkSteps(name, v) {   // validate.steps
    if (!(typeof v === "number" && Math.floor(v) === v && v >= 1)) refuse(name + " must be an integer >= 1, got " + v);
    if (v > MAX_STEPS) refuse(name + " must be at most 10,000,000, got " + v);
    return v;
  }
  function checkDelta(v) {         // validate.delta
    checkUnit("delta", v);
    if (v < 2.2250738585072014e-308) refuse("delta must be at least 2.2e-308, got " + v);
    return v;
  }

  // accounting.dp_to_zcdp (Lemma C.3 inverted, the non-negative root, free of cancellation)
  function dpToZcdp(epsilon, delta) {
    checkPositive("epsilon", epsilon);
    checkDelta(delta);
    var L = Math.log(1.0 / delta);
    var x = epsilon / (Math.sqrt(L + epsilon) + Math.sqrt(L));
    return x * x;
  }
  // accounting.R_zcdp = 2 dp_to_zcdp
  function R_zcdp(epsilon, delta) { return 2.0 * dpToZcdp(epsilon, delta); }

  // bounds.gd.alpha_of: D G^2 / (2 R M N^2 (f(theta_1) - f*))
  function alphaOf(D, G, R, M, N, fGap) {
    checkPositive("D", D); checkPositive("G", G); checkPositive("R", R);
    checkPositive("M", M); checkPositive("N", N); checkPositive("f_gap", fGap);
    return D * (G * G) / (2 * R * M * (N * N) * fGap);
  }

  // schedules._log_gamma: ln(1 - eta0/kappa), -inf when gamma = 0
  function schedLogGamma(kappa, eta0) {
    var x = (eta0 === undefined ? 1.0 : eta0) / kappa;
    return x < 1 ? Math.log1p(-x) : -Infinity;
  }

  // scipy.special.logsumexp of a 1-D array (its algorithm: every maximum separated out)
  function logsumexp(c) {
    var aMax = -Infinity, i;
    for (i = 0; i < c.length; i++) if (c[i] > aMax) aMax = c[i];
    var m = 0, s = 0;
    for (i = 0; i < c.length; i++) {
      if (c[i] === aMax) m += 1; else s += Math.exp(c[i] - aMax);
    }
    if (s !== 0) s = s / m;
    return Math.log1p(s) + Math.log(m) + aMax;
  }

  // schedules.fit_within (sampling rate 1): scaled up by a few ulps until the costs, added one by
  // one, total at most R
  function fitWithin(sigma, R) {
    var out = sigma.slice(), k, i;
    for (k = 0; k < 64; k++) {
      var total = 0;
      for (i = 0; i < out.length; i++) total += 1.0 / (out[i] * out[i]);
      if (total <= R) return out;
      var f = Math.sqrt(total / R) * (1.0 + Math.pow(2, -52) * Math.pow(2, Math.min(k, 40)));
      for (i = 0; i < out.length; i++) out[i] = out[i] * f;
    }
    refuse("cannot fit the schedule within R = " + R);
  }

  // schedules._from_log_weights: 1/sigma_t^2 = R softmax(c)_t, refused beyond float64
  function fromLogWeights(c, R, what, hint) {
    var i;
    for (i = 0; i < c.length; i++) {
      if (isNaN(c[i]) || c[i] === Infinity) refuse(what + ": the schedule's log-weights are not finite; " + hint);
    }
    for (i = 0; i < c.length; i++) {
      if (c[i] === -Infinity) refuse(what + ": step " + (i + 1) + " gets no budget (infinite noise); " + hint);
    }
    var lse = logsumexp(c), logR = Math.log(R), lo = Infinity, hi = -Infinity;
    var ls2 = new Array(c.length);
    for (i = 0; i < c.length; i++) {
      ls2[i] = lse - c[i] - logR;
      if (ls2[i] < lo) lo = ls2[i];
      if (ls2[i] > hi) hi = ls2[i];
    }
    if (hi > LOG_LIMIT || lo < -LOG_LIMIT) {
      refuse(what + ": sigma^2 would range over e^" + lo.toFixed(0) + "..e^" + hi.toFixed(0) +
             ", beyond float64 (|ln sigma^2| <= 700); " + hint);
    }
    var sigma = new Array(c.length);
    for (i = 0; i < c.length; i++) sigma[i] = Math.exp(0.5 * ls2[i]);
    return fitWithin(sigma, R);
  }

  // schedules.uniform: sigma_t^2 = T/R (Thm 4.2)
  function uniform(T, R) {
    checkSteps("T", T); checkPositive("R", R);
    var c = new Array(T);
    for (var i = 0; i < T; i++) c[i] = 0.0;
    return fromLogWeights(c, R, "uniform with T=" + T + ", R=" + R, "use a smaller T or a larger R");
  }

  // schedules._gd_hint
  function gdHint(kappa) {
    var lg = schedLogGamma(kappa);
    if (!isFinite(lg)) return "kappa = 1 (gamma = 0) only allows T = 1; use kappa > 1";
    var tMax = 1 + Math.trunc(1300.0 / -lg);
    return "the noise ratio grows like gamma^(-T/2): use T <= " + tMax + " for this kappa, or a larger kappa";
  }

  // schedules.gd_dynamic: Lemma 4.3 on q_t = gamma^(T-t), i.e. c_t = (T - t) ln(gamma) / 2 (Thm 4.4)
  function gdDynamic(T, R, kappa) {
    checkSteps("T", T); checkPositive("R", R); checkKappa(kappa);
    var lg = schedLogGamma(kappa), c = new Array(T), t;
    for (t = 1; t <= T; t++) {
      var lq = isFinite(lg) ? (T - t) * lg : (t === T ? 0.0 : -Infinity);   // log_influence("gd-dynamic")
      c[t - 1] = 0.5 * lq;
    }
    return fromLogWeights(c, R, "gd-dynamic with T=" + T + ", kappa=" + kappa, gdHint(kappa));
  }

  // schedules.momentum_T_hat: max t <= T with gamma^(t-1) >= (1 - beta)/(1 - beta^t), gamma = 1 - eta0/kappa
  function momentumTHatUpTo(T, kappa, beta, eta0) {
    checkSteps("T", T); checkKappa(kappa);
    if (!(beta >= 0 && beta < 1)) refuse("beta must be in [0, 1), got " + beta);
    var lg = schedLogGamma(kappa, eta0), best = 1, t;
    var l1b = Math.log1p(-beta);
    for (t = 2; t <= T; t++) {
      var lhs = isFinite(lg) ? (t - 1) * lg : -Infinity;
      var rhs = beta > 0 ? l1b - Math.log1p(-Math.pow(beta, t)) : 0.0;
      if (lhs >= rhs - 1e-12) best = t;
    }
    return best;
  }

  // schedules.momentum_dynamic, variant "corrected" (the default): Lemma 4.3 on the influence of Thm 4.7
  // with c1 = 2/(gamma (gamma - beta^2)) and c2' = gamma^T_hat/(gamma - beta^2), split on t <= T_hat
  function momentumDynamic(T, R, kappa, beta) {
    checkSteps("T", T); checkPositive("R", R); checkKappa(kappa);
    if (!(beta >= 0 && beta < 1)) refuse("beta must be in [0, 1), got " + beta);
    var eta0 = 1.0;
    if (eta0 >= kappa) refuse("eta0 must be < kappa (gamma = 1 - eta0/kappa must be in (0, 1)), got kappa=" + kappa);
    var gamma = 1.0 - eta0 / kappa, lg = schedLogGamma(kappa, eta0);
    if (!(beta < gamma)) refuse("beta must be < gamma = 1 - eta0/kappa = " + gamma.toPrecision(6) + " (Thm 4.7), got " + beta);
    var Th = momentumTHatUpTo(T, kappa, beta, eta0);
    var lgb = Math.log(gamma - beta * beta);
    var logC1 = Math.log(2.0) - lg - lgb;
    var logC2 = 1 * Th * lg - lgb;
    var c = new Array(T), t;
    for (t = 1; t <= T; t++) {
      var lq = t <= Th ? logC1 + (T + t) * lg : (Th - 1) * lg + logC2 + (T - t) * lg;
      c[t - 1] = 0.5 * lq;
    }
    return fromLogWeights(c, R, "momentum-dynamic (corrected) with T=" + T + ", kappa=" + kappa + ", beta=" + beta,
                          "use a smaller T or a larger kappa");
  }

  // bounds.gd helpers: ln(gamma) = log1p(-1/kappa) (-inf at kappa = 1), gamma^T, 1 - gamma^T
  function gdLogGamma(kappa) { return kappa === 1 ? -Infinity : Math.log1p(-1.0 / kappa); }
  function gammaPow(T, lg) { return T === 0 ? 1.0 : Math.exp(T * lg); }
  function oneMinusGammaPow(T, lg) { return T === 0 ? 0.0 : (isFinite(lg) ? -Math.expm1(T * lg) : 1.0); }
  // bounds.gd.one_minus_sqrt_gamma: (1/kappa) / (1 + sqrt(gamma))
  function oneMinusSqrtGamma(kappa) { var g = 1.0 - 1.0 / kappa; return (1.0 / kappa) / (1.0 + Math.sqrt(g)); }

  // bounds.gd.erub (Thm 4.1, Eq. 7): gamma^T + R sum_t q_t sigma_t^2, q_t = alpha gamma^(T-t)
  function erub(sigma, kappa, alpha, R) {
    checkPositive("R", R); checkKappa(kappa); checkPositive("alpha", alpha);
    var T = sigma.length, lg = gdLogGamma(kappa), s = 0;
    for (var t = 1; t <= T; t++) s += alpha * gammaPow(T - t, lg) * (sigma[t - 1] * sigma[t - 1]);
    return gammaPow(T, lg) + R * s;
  }
  // bounds.gd.erub_uniform (Eq. 9): gamma^T + alpha kappa (1 - gamma^T) T
  function erubUniform(T, kappa, alpha) {
    var lg = gdLogGamma(kappa);
    return gammaPow(T, lg) + alpha * kappa * oneMinusGammaPow(T, lg) * T;
  }
  // bounds.gd.erub_dynamic (proof of Thm 4.4): gamma^T + alpha ((1 - gamma^(T/2)) / (1 - sqrt(gamma)))^2
  function erubDynamic(T, kappa, alpha) {
    var lg = gdLogGamma(kappa), s = oneMinusSqrtGamma(kappa);
    var r = oneMinusGammaPow(T / 2, lg) / s;
    return gammaPow(T, lg) + alpha * (r * r);
  }
  // bounds.gd.t_uniform (Eq. 24): ln(1 + ln(1/gamma)/alpha) / ln(1/gamma)
  function tUniform(kappa, alpha) {
    if (kappa === 1) return 0.0;
    var L = -gdLogGamma(kappa);
    return Math.log1p(L / alpha) / L;
  }
  // bounds.gd.t_uniform_surrogate (Eq. 23)
  function tUniformSurrogate(kappa, alpha) {
    var L = -gdLogGamma(kappa);
    if (kappa * alpha - L >= 0) return 0.0;
    return Math.log(L / (kappa * alpha)) / L;
  }
  // bounds.gd.erub_uniform_eq25 (Eq. 25)
  function erubUniformEq25(kappa, alpha) {
    if (kappa === 1) return 1.0;
    var u = -gdLogGamma(kappa) / alpha;
    return (1 + kappa * Math.log1p(u)) / (1 + u);
  }
  // bounds.gd.t_dynamic (Eq. 27): 2 log_gamma(alpha / (alpha + (1 - sqrt(gamma))^2))
  function tDynamic(kappa, alpha) {
    if (kappa === 1) return 0.0;
    var s = oneMinusSqrtGamma(kappa);
    return 2 * Math.log1p((s * s) / alpha) / (-gdLogGamma(kappa));
  }
  // bounds.gd.t_dynamic_statement (Thm 4.4 as stated): 2 kappa ln(1 + 1/(kappa alpha))
  function tDynamicStatement(kappa, alpha) { return 2 * kappa * Math.log1p(1 / (kappa * alpha)); }
  // bounds.gd.erub_dynamic_min (after Eq. 27): A/(A + 1), A = alpha (1 - sqrt(gamma))^-2
  function erubDynamicMin(kappa, alpha) {
    var s = oneMinusSqrtGamma(kappa), A = alpha / (s * s);
    return A / (A + 1);
  }
  // bounds.gd._exhaustive: the first integer minimiser over [lo, hi]
  function exhaustive(f, lo, hi) {
    if (hi - lo > T_CAP) {
      refuse("the exhaustive search range [" + lo + ", " + hi + "] exceeds " + T_CAP +
             " integers; choose a larger alpha or smaller kappa");
    }
    var bestT = lo, best = f(lo);
    for (var T = lo + 1; T <= hi; T++) {
      var v = f(T);
      if (v < best) { best = v; bestT = T; }
    }
    return [bestT, best];
  }
  // bounds.gd.argmin_uniform (T_min = 1)
  function argminUniform(kappa, alpha) {
    var Tmin = 1, f = function (T) { return erubUniform(T, kappa, alpha); };
    var t24 = tUniform(kappa, alpha);
    var cands = [Tmin, Math.max(Tmin, Math.floor(t24)), Math.max(Tmin, Math.ceil(t24))];
    var U = Infinity;
    for (var i = 0; i < cands.length; i++) U = Math.min(U, f(cands[i]));
    var hi = Math.max(Tmin, Math.ceil(kappa), Math.ceil(U / (alpha * kappa * (1 - Math.exp(-1)))));
    return exhaustive(f, Tmin, hi);
  }
  // bounds.gd.argmin_dynamic (T_min = 1): the objective is unimodal in T
  function argminDynamic(kappa, alpha) {
    var Tmin = 1, t27 = tDynamic(kappa, alpha);
    var hi = Math.max(Tmin + 10, 2 * Math.ceil(t27) + 10, Math.ceil(kappa));
    return exhaustive(function (T) { return erubDynamic(T, kappa, alpha); }, Tmin, hi);
  }

  // bounds.momentum.eta0_max (Thm 4.5, App. D.2): 8 / (sqrt(1 + 64 beta gamma (gamma-beta)^-2 (1-beta)^-3) + 1)
  function eta0Max(beta, gamma) {
    checkUnit("beta", beta); checkUnit("gamma", gamma);
    if (beta === gamma) refuse("beta must differ from gamma (Thm 4.5), got beta = gamma = " + beta);
    var A = beta * gamma / (Math.pow(gamma - beta, 2) * Math.pow(1 - beta, 3));
    return 8.0 / (Math.sqrt(1.0 + 64.0 * A) + 1.0);
  }
  // bounds.momentum.T_hat (Thm 4.6/4.7, Lemma C.7)
  function THat(beta, gamma) {
    checkUnit("beta", beta); checkUnit("gamma", gamma);
    var upper = 2 + Math.floor(Math.log1p(-beta) / Math.log(gamma));
    if (upper > T_HAT_MAX) refuse("T_hat would exceed 5e6 steps for beta=" + beta + ", gamma=" + gamma + "; use gamma further from 1");
    return momentumTHatUpTo(upper, 1.0 / (1.0 - gamma), beta, 1.0);
  }

  // ------------------------------------------------------------------ compute(): every number shown

  var DEFAULTS = { epsilon: 4, delta: 1e-8, T: 100, kappa: 10, N: 60000, beta: 0.9, D: 10 };

  /* All the numbers the explorer shows for one setting. G = M = f(theta_1) - f* = 1; eta = 1/M.
     A number the library refuses is null, with the library's reason in errors[key]. */
  function compute(p) {
    p = p || {};
    var x = {}, k;
    for (k in DEFAULTS) x[k] = (p[k] === undefined || p[k] === null) ? DEFAULTS[k] : Number(p[k]);
    checkPositive("epsilon", x.epsilon); checkDelta(x.delta); checkSteps("T", x.T);
    checkKappa(x.kappa); checkPositive("N", x.N); checkUnit("beta", x.beta); checkPositive("D", x.D);
    var out = { epsilon: x.epsilon, delta: x.delta, T: x.T, kappa: x.kappa, N: x.N, beta: x.beta, D: x.D,
                G: 1, M: 1, f_gap: 1, errors: {} };
    function put(keys, fn) {
      try {
        var v = fn();
        if (keys.length === 1) out[keys[0]] = v;
        else for (var i = 0; i < keys.length; i++) out[keys[i]] = v[i];
      } catch (e) {
        if (!(e instanceof LibraryError)) throw e;
        for (var j = 0; j < keys.length; j++) { out[keys[j]] = null; out.errors[keys[j]] = e.message; }
      }
    }
    var T = x.T, kappa = x.kappa;
    out.R = R_zcdp(x.epsilon, x.delta);
    out.alpha = alphaOf(x.D, 1, out.R, 1, x.N, 1);
    out.gamma = 1 - 1 / kappa;
    var alpha = out.alpha, R = out.R;
    put(["sigma_uniform"], function () { return uniform(T, R); });
    put(["sigma_dynamic"], function () { return gdDynamic(T, R, kappa); });
    put(["sigma_momentum"], function () { return momentumDynamic(T, R, kappa, x.beta); });
    put(["erub_uniform"], function () {
      if (!out.sigma_uniform) refuse(out.errors.sigma_uniform);
      return erub(out.sigma_uniform, kappa, alpha, R);
    });
    put(["erub_dynamic"], function () {
      if (!out.sigma_dynamic) refuse(out.errors.sigma_dynamic);
      return erub(out.sigma_dynamic, kappa, alpha, R);
    });
    out.erub_uniform_closed = erubUniform(T, kappa, alpha);
    out.erub_dynamic_closed = erubDynamic(T, kappa, alpha);
    out.T_uniform_eq24 = tUniform(kappa, alpha);
    out.T_uniform_surrogate = tUniformSurrogate(kappa, alpha);
    out.erub_uniform_eq25 = erubUniformEq25(kappa, alpha);
    out.T_dynamic_eq27 = tDynamic(kappa, alpha);
    out.T_dynamic_statement = tDynamicStatement(kappa, alpha);
    out.erub_dynamic_min = erubDynamicMin(kappa, alpha);
    put(["argmin_uniform_T", "argmin_uniform_erub"], function () { return argminUniform(kappa, alpha); });
    put(["argmin_dynamic_T", "argmin_dynamic_erub"], function () {
      if (kappa === 1) refuse("kappa must be in (1, inf) for the dynamic schedule, got 1");
      return argminDynamic(kappa, alpha);
    });
    put(["eta0_max"], function () { return eta0Max(x.beta, out.gamma); });
    put(["T_hat"], function () { return THat(x.beta, out.gamma); });
    return out;
  }

  // ------------------------------------------------------------------ the widget

  var SVGNS = "http://www.w3.org/2000/svg";
  var SLIDER_STEPS = 1000;
  /* The sliders: a log slider moves ln(value) evenly; values are rounded to the digits shown, so
     that the number shown is the number used. */
  var SLIDERS = [
    { key: "epsilon", label: "\u03b5", min: 0.05, max: 50, scale: "log", digits: 3 },
    { key: "delta", label: "\u03b4", min: 1e-10, max: 1e-2, scale: "log", digits: 2 },
    { key: "T", label: "T (steps)", min: 1, max: 2000, scale: "log", integer: true },
    { key: "kappa", label: "\u03ba = M/\u03bc", min: 1.5, max: 1000, scale: "log", digits: 3 },
    { key: "N", label: "N (examples)", min: 100, max: 1000000, scale: "log", integer: true, digits: 3 },
    { key: "beta", label: "\u03b2 (momentum)", min: 0.05, max: 0.99, scale: "lin", decimals: 2 }
  ];

  function sliderValue(s, pos) {
    var f = pos / SLIDER_STEPS, v;
    v = s.scale === "log" ? Math.exp(Math.log(s.min) + f * (Math.log(s.max) - Math.log(s.min)))
                          : s.min + f * (s.max - s.min);
    if (s.digits) v = Number(v.toPrecision(s.digits));
    if (s.decimals !== undefined) v = Number(v.toFixed(s.decimals));
    if (s.integer) v = Math.round(v);
    return Math.min(s.max, Math.max(s.min, v));
  }
  function sliderPos(s, v) {
    var f = s.scale === "log" ? (Math.log(v) - Math.log(s.min)) / (Math.log(s.max) - Math.log(s.min))
                              : (v - s.min) / (s.max - s.min);
    return Math.round(Math.min(1, Math.max(0, f)) * SLIDER_STEPS);
  }

  /* How a number reads: integers whole, others to 5 significant digits. */
  function fmt(v, integer) {
    if (v === null || v === undefined) return "\u2014";
    if (integer) return String(v);
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e-3 && a < 1e6) return String(Number(v.toPrecision(5)));
    return v.toExponential(4).replace("e+", "e");
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* The numbers beside the plot: [key, label, integer?]. */
  var GROUPS = [
    ["Budget", [
      ["R", "R, zCDP budget of (\u03b5, \u03b4) (Lemma C.3)"],
      ["alpha", "\u03b1 = D G\u00b2/(2 R M N\u00b2 (f(\u03b8\u2081) \u2212 f*))"],
      ["gamma", "\u03b3 = 1 \u2212 1/\u03ba"]]],
    ["Bound of Thm 4.1 at this T", [
      ["erub_uniform", "uniform schedule"],
      ["erub_uniform_closed", "uniform, closed form (Eq. 9)"],
      ["erub_dynamic", "dynamic schedule"],
      ["erub_dynamic_closed", "dynamic, closed form (proof of Thm 4.4)"]]],
    ["Best T, uniform (Thm 4.2)", [
      ["T_uniform_eq24", "T of Eq. (24)"],
      ["erub_uniform_eq25", "bound there (Eq. 25)"],
      ["argmin_uniform_T", "best integer T", true],
      ["argmin_uniform_erub", "bound there"]]],
    ["Best T, dynamic (Thm 4.4)", [
      ["T_dynamic_eq27", "T of Eq. (27)"],
      ["T_dynamic_statement", "T printed in the statement"],
      ["argmin_dynamic_T", "best integer T", true],
      ["argmin_dynamic_erub", "bound there"],
      ["erub_dynamic_min", "minimum over real T"]]],
    ["Momentum (Thm 4.5-4.7) at \u03b7\u2080 = 1: \u03b3 = 1 \u2212 \u03b7\u2080/\u03ba = 1 \u2212 1/\u03ba", [
      ["eta0_max", "largest \u03b7\u2080 (Thm 4.5; \u03b7\u2080 = 1 is admitted only if this is \u2265 1)"],
      ["T_hat", "T\u0302 (Thm 4.6, 4.7)", true]]]
  ];

  var SERIES = [
    { key: "sigma_uniform", label: "uniform (Thm 4.2)", cls: "dpc-x-uniform" },
    { key: "sigma_dynamic", label: "dynamic (Thm 4.4)", cls: "dpc-x-dynamic" },
    { key: "sigma_momentum", label: "momentum, dynamic (Thm 4.7)", cls: "dpc-x-momentum", momentum: true }
  ];

  function niceStep(range, n) {
    var raw = range / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  /* The schedules on a log axis: sigma_t against t = 1..T. */
  function draw(svg, res, series, width) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var H = 230, W = Math.max(240, Math.round(width)), L = 52, Rm = 10, Tp = 10, B = 36;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    var T = res.T, lo = Infinity, hi = -Infinity, shown = [];
    series.forEach(function (s) {
      var a = res[s.key];
      if (!a) return;
      shown.push(s);
      for (var i = 0; i < a.length; i++) { var y = Math.log10(a[i]); if (y < lo) lo = y; if (y > hi) hi = y; }
    });
    if (!shown.length) { lo = 0; hi = 1; }
    if (hi - lo < 0.1) { var mid = (hi + lo) / 2; lo = mid - 0.5; hi = mid + 0.5; }   // at least a decade
    else { var pad = 0.05 * (hi - lo); lo -= pad; hi += pad; }
    var x0 = 1, x1 = Math.max(T, 2);
    function X(t) { return L + (t - x0) / (x1 - x0) * (W - L - Rm); }
    function Y(y) { return Tp + (hi - y) / (hi - lo) * (H - Tp - B); }
    var g = svgEl("g", { "class": "dpc-x-axes" });
    svg.appendChild(g);
    // y ticks: whole decades over a wide range, evenly spaced values of sigma over a narrow one
    function yTick(y, lab) {
      var yy = Y(y);
      g.appendChild(svgEl("line", { x1: L, x2: W - Rm, y1: yy, y2: yy, "class": "dpc-x-grid" }));
      g.appendChild(svgEl("text", { x: L - 4, y: yy + 4, "text-anchor": "end" }, lab));
    }
    var step, y;
    if (hi - lo > 1.2) {
      step = Math.max(1, Math.round(niceStep(hi - lo, 5)));
      for (y = Math.ceil(lo / step) * step; y <= hi; y += step) yTick(y, Math.abs(y) <= 3 ? fmt(Math.pow(10, y)) : "1e" + y);
    } else {
      var s0 = Math.pow(10, lo), s1 = Math.pow(10, hi);
      step = niceStep(s1 - s0, 4);
      for (var v = Math.ceil(s0 / step) * step; v <= s1; v += step) {
        var vr = Number(v.toPrecision(6));
        if (vr > 0) yTick(Math.log10(vr), fmt(vr));
      }
    }
    var xs = niceStep(x1 - x0, Math.max(2, Math.floor((W - L) / 70)));
    xs = Math.max(1, xs);
    for (var t = Math.ceil(x0 / xs) * xs; t <= x1; t += xs) {
      if (t < 1) continue;
      g.appendChild(svgEl("line", { x1: X(t), x2: X(t), y1: H - B, y2: H - B + 4 }));
      g.appendChild(svgEl("text", { x: X(t), y: H - B + 16, "text-anchor": "middle" }, String(t)));
    }
    g.appendChild(svgEl("line", { x1: L, x2: W - Rm, y1: H - B, y2: H - B }));
    g.appendChild(svgEl("line", { x1: L, x2: L, y1: Tp, y2: H - B }));
    g.appendChild(svgEl("text", { x: (L + W - Rm) / 2, y: H - 4, "text-anchor": "middle" }, "step t"));
    g.appendChild(svgEl("text", { x: 12, y: (Tp + H - B) / 2, "text-anchor": "middle",
                                  transform: "rotate(-90 12 " + (Tp + H - B) / 2 + ")" }, "\u03c3\u209c (log scale)"));
    shown.forEach(function (s) {
      var a = res[s.key], pts = [];
      var stride = Math.max(1, Math.floor(a.length / 2000));
      for (var i = 0; i < a.length; i += stride) pts.push(X(i + 1).toFixed(2) + "," + Y(Math.log10(a[i])).toFixed(2));
      if (a.length === 1) {
        svg.appendChild(svgEl("circle", { cx: X(1), cy: Y(Math.log10(a[0])), r: 4, "class": "dpc-x-line " + s.cls }));
      } else {
        pts.push(X(a.length).toFixed(2) + "," + Y(Math.log10(a[a.length - 1])).toFixed(2));
        svg.appendChild(svgEl("polyline", { points: pts.join(" "), "class": "dpc-x-line " + s.cls }));
      }
    });
  }

  function render(root) {
    if (root.getAttribute("data-dpc-rendered")) return;
    root.setAttribute("data-dpc-rendered", "1");
    var momentum = root.getAttribute("data-momentum") === "true";
    var state = {};
    for (var k in DEFAULTS) {
      var given = root.getAttribute("data-" + k.toLowerCase());
      state[k] = given !== null && given !== "" ? Number(given) : DEFAULTS[k];
    }
    var series = SERIES.filter(function (s) { return momentum || !s.momentum; });
    while (root.firstChild) root.removeChild(root.firstChild);

    var controls = el("div", { "class": "dpc-x-controls" });
    var outputs = {};
    SLIDERS.forEach(function (s) {
      var id = "dpc-x-" + Math.random().toString(36).slice(2, 10) + "-" + s.key;
      var row = el("div", { "class": "dpc-x-control" });
      var lab = el("label", { "for": id });
      lab.appendChild(el("span", { "class": "dpc-x-name" }, s.label + " = "));
      var o = el("span", { "class": "dpc-x-value", "data-key": s.key });
      lab.appendChild(o);
      outputs[s.key] = o;
      var input = el("input", { type: "range", id: id, min: "0", max: String(SLIDER_STEPS), step: "1",
                                "data-param": s.key, value: String(sliderPos(s, state[s.key])) });
      input.addEventListener("input", function () { state[s.key] = sliderValue(s, Number(input.value)); update(); });
      row.appendChild(lab);
      row.appendChild(input);
      controls.appendChild(row);
    });
    var fixed = el("div", { "class": "dpc-x-control dpc-x-fixed" });
    fixed.appendChild(el("span", { "class": "dpc-x-name" }, "D = "));
    var dOut = el("span", { "class": "dpc-x-value", "data-key": "D" });
    fixed.appendChild(dOut);
    fixed.appendChild(el("span", {}, ", G = M = f(\u03b8\u2081) \u2212 f* = 1, \u03b7 = 1/M"));
    outputs.D = dOut;
    controls.appendChild(fixed);
    root.appendChild(controls);

    var body = el("div", { "class": "dpc-x-body" });
    var plot = el("div", { "class": "dpc-x-plot" });
    var svg = svgEl("svg", { role: "img", "class": "dpc-x-svg",
                             "aria-label": "noise multipliers sigma_t of the schedules against the step t" });
    plot.appendChild(svg);
    var legend = el("ul", { "class": "dpc-x-legend" });
    series.forEach(function (s) {
      var li = el("li", {});
      li.appendChild(el("span", { "class": "dpc-x-swatch " + s.cls }));
      li.appendChild(document.createTextNode(s.label));
      legend.appendChild(li);
    });
    plot.appendChild(legend);
    var note = el("p", { "class": "dpc-x-note", "aria-live": "polite" });
    plot.appendChild(note);
    body.appendChild(plot);

    var numbers = el("div", { "class": "dpc-x-numbers" });
    var cells = {};
    GROUPS.forEach(function (grp) {
      var box = el("div", { "class": "dpc-x-group" });
      box.appendChild(el("p", { "class": "dpc-x-group-title" }, grp[0]));
      var dl = el("dl", {});
      grp[1].forEach(function (item) {
        dl.appendChild(el("dt", {}, item[1]));
        var dd = el("dd", {});
        var span = el("span", { "data-key": item[0] });
        dd.appendChild(span);
        dl.appendChild(dd);
        cells[item[0]] = [span, !!item[2], item[1]];
      });
      box.appendChild(dl);
      numbers.appendChild(box);
    });
    body.appendChild(numbers);
    root.appendChild(body);

    var last = null;
    function show(span, v, integer, err) {
      span.textContent = fmt(v, integer);
      span.setAttribute("data-value", v === null || v === undefined ? "" : String(v));
      if (err) span.setAttribute("title", err); else span.removeAttribute("title");
    }
    function redraw() { if (last) draw(svg, last, series, plot.clientWidth || 480); }
    function update() {
      var res = compute(state);
      last = res;
      // a parameter reads as it is used (the sliders round it to the digits shown)
      SLIDERS.forEach(function (s) { show(outputs[s.key], res[s.key], true); });
      show(outputs.D, res.D, true);
      var msgs = [];
      series.forEach(function (s) { if (res.errors[s.key]) msgs.push(s.label + ": not drawn (" + res.errors[s.key] + ")."); });
      for (var key in cells) {
        show(cells[key][0], res[key], cells[key][1], res.errors[key]);
        if (res.errors[key] && !/^argmin_.*_erub$/.test(key)) msgs.push(cells[key][2] + ": \u2014 (" + res.errors[key] + ").");
      }
      note.textContent = msgs.join(" ");
      redraw();
      root.dpcResult = res;
    }
    root.dpcState = state;
    root.dpcUpdate = update;
    update();
    // folded (a <details>), the plot takes the column's width when opened
    var fold = root.closest ? root.closest("details") : null;
    if (fold) fold.addEventListener("toggle", function () { if (fold.open) redraw(); });
    var pending = false;
    window.addEventListener("resize", function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; redraw(); });
    });
  }

  function renderAll() {
    var roots = document.querySelectorAll("div.dpc-explorer");
    for (var i = 0; i < roots.length; i++) render(roots[i]);
  }

  window.dpcExplorer = {
    compute: compute,
    render: render,
    renderAll: renderAll,
    sliders: SLIDERS,
    sliderValue: sliderValue,
    defaults: DEFAULTS
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", renderAll);
  else renderAll();
})();
