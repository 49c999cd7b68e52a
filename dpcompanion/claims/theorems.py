"""The papers' results as the book states them: one declaration per theorem box, shown by
``dpcompanion.book.claims_page.show_theorem(id)`` on the page that checks the result (ids are claim-id prefixes).

Hong et al. 2022 (FAccT, arXiv 2101.07413); Wu et al. 2021 (ADP-SGD, arXiv 2110.07435).
"""

from __future__ import annotations

from dpcompanion.claims.registry import theorem

theorem('H-L3.1', kind='theorem', label='thm-3-1', title='Privacy of PGD with a noise schedule (Thm 3.1)',
        statement=r"""
Let each per-sample gradient have norm at most $G$, so the averaged gradient has
sensitivity $G/N$. If step $t$ adds Gaussian noise $\sigma_t G v_t/N$, $v_t\sim\mathcal N(0,I)$,
and the schedule satisfies $\sum_t \sigma_t^{-2}\le R$, then the released iterate is
$\tfrac R2$-zCDP.
""", sketch=r"""
Clipping bounds the averaged gradient's sensitivity by $G/N$, so the step-$t$ Gaussian
release with standard deviation $\sigma_tG/N$ is $\frac{1}{2\sigma_t^2}$-zCDP (the Gaussian
mechanism, Lemma C.2). Each iterate is a post-processing of the previous state and the new
noisy gradient, so zCDP composes additively over the $T$ steps (Lemma C.1):
$\rho=\sum_t\frac{1}{2\sigma_t^2}\le\frac R2$.
""")

theorem('H-C3', kind='lemma', label='lem-c-3', title='zCDP to approximate DP (Lemma C.3)', statement=r"""
A $\rho$-zCDP mechanism is $(\rho+2\sqrt{\rho\ln(1/\delta)},\delta)$-DP for every $\delta>0$.
""", sketch=r"""
zCDP bounds every Renyi divergence of order $a>1$ by $a\rho$; the Renyi-to-approximate-DP
conversion then gives $\varepsilon=a\rho+\ln(1/\delta)/(a-1)$ for each $a$, and the order
$a=1+\sqrt{\ln(1/\delta)/\rho}$ minimises it to $\rho+2\sqrt{\rho\ln(1/\delta)}$.
""")

theorem('H-C4', kind='lemma', label='lem-c-4', title='Squared-loss sensitivity (Lemma C.4)', statement=r"""
For $f(\theta;x)=\frac12(x^\top\theta-1)^2$ with $\max_n\|x_n\|=1$ and centred data,
the paper states $\Delta_2(\nabla)=\max_i\frac1N\sqrt{2f(\theta;x_i)}\|x_i\|\le\frac12(DM\|\theta\|^2+1)$,
with $M$ the smoothness constant of $f$; the lemma puts no condition on $M$, on a step size or on $\eta M$
(under its normalisation $M=\lambda_{\max}(\frac1N\sum_nx_nx_n^\top)\le1$).
""")

theorem('H-T4.1', kind='theorem', label='thm-4-1', title='Utility of PGD with any schedule (Thm 4.1)', statement=r"""
If each $f(\theta;x_i)$ is $G$-Lipschitz and $f$ is $M$-smooth and satisfies the PL
condition with constant $\mu$, PGD with $\eta_t=1/M$ satisfies
$\mathrm{ERUB}=\gamma^T+R\sum_{t=1}^T q_t\sigma_t^2$ with influence $q_t=\gamma^{T-t}\alpha$.
""", sketch=r"""
Smoothness bounds one step's decrease by the gradient term and the noise's second moment;
the cross term vanishes in expectation and the PL condition turns $\|\nabla f\|^2$ into the
excess risk. With $\eta_t=1/M$ the excess risk contracts by $\gamma=1-1/\kappa$ per step and
gains $\frac{MD}{2}(G\sigma_t/(MN))^2$; unrolling the recursion over $T$ steps weights the
noise of step $t$ by $\gamma^{T-t}$, which is the influence $q_t$.
""")

theorem('H-T4.2', kind='theorem', label='thm-4-2', title='Uniform schedule (Thm 4.2)', statement=r"""
With $\sigma_t^2=T/R$ the bound is $\gamma^T+\alpha\kappa(1-\gamma^T)T$ (Eq. 9). The proof
chooses $T=\ln(1+\ln(1/\gamma)/\alpha)/\ln(1/\gamma)$ (Eq. 24), evaluates the bound there
(Eq. 25) and states $\mathrm{ERUB}^{uniform}_{\min}=\Theta\left(\frac{\kappa^2}{\kappa+1/\alpha}\ln(1+\frac{1}{\kappa\alpha})\right)$
(Eq. 8) for $\kappa\ge1/(1-c)$ and small $\alpha$.
""", sketch=r"""
Substitute the uniform $\sigma_t^2=T/R$ into Thm 4.1 and sum the geometric influences to get
Eq. 9. Its exact minimiser solves a Lambert-W equation, so the proof picks the $T$ of Eq. 24
instead, evaluates the bound there (Eq. 25) and brackets $\ln(1/\gamma)$ between $1/\kappa$
and $1/(c\kappa)$ to get the order of Eq. 8.
""")

theorem('H-L4.3', kind='lemma', label='lem-4-3', title='Optimal schedule for given influences (Lemma 4.3)',
        statement=r"""
For positive $q_1,\dots,q_T$ and $\sum_t\sigma_t^{-2}=R$, the minimum of
$R\sum_tq_t\sigma_t^2$ is $(\sum_t\sqrt{q_t})^2$, attained only at
$\sigma_t^2=\frac1R\sum_i\sqrt{q_i/q_t}$.
""", sketch=r"""
Multiply the objective by the budget $R=\sum_t\sigma_t^{-2}$ and apply Cauchy-Schwarz to the
vectors $(\sigma_t^{-1})$ and $(\sqrt{q_t}\,\sigma_t)$: the product is at least
$(\sum_t\sqrt{q_t})^2$, with equality exactly when the two vectors are proportional,
$\sigma_t^{-2}\propto\sqrt{q_t}$; the budget fixes the constant.
""")

theorem('H-T4.4', kind='theorem', label='thm-4-4', title='Dynamic schedule (Thm 4.4)', statement=r"""
$T$ counts the noisy steps $t=1,\dots,T$ from $\theta_1$ to the released $\theta_{T+1}$, and every sum
below runs over $t=1,\dots,T$, as in Thm 4.1's Eq. (7), $\mathrm{ERUB}=\gamma^T+R\sum_{t=1}^Tq_t\sigma_t^2$,
on which the theorem builds (FAccT version, Eq. 7 and 10).
With $q_t=\gamma^{T-t}\alpha$, Lemma 4.3 gives
$\sigma_t^2=\frac1R\frac{\sqrt{(1/\gamma)^T}-1}{1-\sqrt\gamma}\sqrt{\gamma^t}$ and
$\mathrm{ERUB}^{dyn}(T)=\gamma^T+\alpha\left(\frac{1-\gamma^{T/2}}{1-\sqrt\gamma}\right)^2$.
The statement gives the minimising $T$ as $\lceil2\kappa\ln(1+\frac{1}{\kappa\alpha})\rceil$,
the proof as $2\log_\gamma\frac{\alpha}{\alpha+(1-\sqrt\gamma)^2}$ (Eq. 27), and
$\mathrm{ERUB}^{dyn}_{\min}=\Theta\left(\frac{\kappa^2}{\kappa^2+1/\alpha}\right)$ (Eq. 11).
""", sketch=r"""
Put the influences $q_t=\gamma^{T-t}\alpha$ of Thm 4.1 into Lemma 4.3: the optimal schedule
is $\sigma_t^2\propto\gamma^{t/2}$ and the noise term becomes $\alpha(\sum_t\gamma^{(T-t)/2})^2$,
a geometric sum. Setting the derivative in $T$ to zero gives Eq. 27; substituting it back
and bracketing $(1-\sqrt\gamma)^{-1}$ between $\kappa$ and $2\kappa$ gives Eq. 11.
""")

theorem('H-T4.5', kind='theorem', label='thm-4-5', title='Convergence under the PL condition (Thm 4.5)', statement=r"""
Let each $f(\theta;x_i)$ be $G$-Lipschitz and $f$ be $M$-smooth and PL, $\beta\in(0,1)$,
$\beta\ne\gamma$, $\eta_t=\eta_0/(2M)$ and
$\eta_0\le 8\,(\sqrt{1+64\beta\gamma(\gamma-\beta)^{-2}(1-\beta)^{-3}}+1)^{-1}$. Then
$\mathrm{EER}\le(\gamma^T+2R\eta_0\alpha U_3)(f(\theta_1)-f^*)-\zeta\frac{\eta_0}{2M}\sum_t\gamma^{T-t}\mathbb E\|v_{t+1}\|^2$
with, as printed, $\zeta=1-\frac{\eta_0^2}{\beta(1-\beta)^3}-\frac{\eta_0}{4}\ge0$.
""", sketch=r"""
Smoothness splits one momentum step into a descent term, a non-negative drift term $U_1(t)$
(the gap between the current gradient and the momentum average) and the step's second moment.
The drift is bounded by past gradient differences (Lemma C.5) and the noise; with the step
size bounded by $\eta_0$'s condition the coefficient $\zeta$ of the remaining second-moment
term is non-negative, and the PL condition with the double sum of Lemma C.6 unrolls the
recursion into the stated bound.
""")

theorem('H-C5', kind='lemma', label='lem-c-5', title='Gradient drift (Lemma C.5)', statement=r"""
Under Theorem 4.5's assumptions,
$\sum_t\gamma^{T-t}\frac{2(1-\beta)\eta_t}{b_t}\sum_{i\le t}\beta^{t-i}\|\nabla_t-\nabla_i\|^2\le\frac{\eta_0^3\beta\gamma}{2M(1-\beta)^3(\gamma-\beta)^2}\sum_{i<T}\gamma^{T-i}\|v_{i+1}\|^2$.
""")

theorem('H-C6', kind='lemma', label='lem-c-6', title='A double sum (Lemma C.6)', statement=r"""
$\sum_t\gamma^{T-t}\sum_{i<t}\|v_{i+1}\|^2\sum_{k=t-i}^{t-1}k\beta^k\le\frac{2\beta\gamma}{(\gamma-\beta)^2(1-\beta)}\sum_{i<T}\gamma^{T-i}\|v_{i+1}\|^2$.
""")

theorem('H-C7', kind='lemma', label='lem-c-7', title='The switch point (Lemma C.7)', statement=r"""
Let $\hat T=\max\{t:\gamma^{t-1}\ge(1-\beta)/(1-\beta^t)\}$. Then
$(1-\beta)/(1-\beta^t)\le\gamma^{t-1}$ for $t\le\hat T$ and $<\gamma^{\hat T-1}$ for $t>\hat T$.
""")

theorem('H-T4.6', kind='theorem', label='thm-4-6', title='Uniform schedule with momentum (Thm 4.6)', statement=r"""
With $\sigma_t^2=T/R$ and $T=\lceil O(\frac{\kappa}{\eta_0}\ln(1+\frac{\eta_0}{\kappa\alpha}))\rceil$,
$\mathrm{ERUB}_{\min}\le O\big(\frac{\kappa^2}{\kappa+\eta_0/\alpha}[\mathbb I_{T\le\hat T}+\gamma^{\hat T-1}\ln(1+\frac{\eta_0}{\kappa\alpha})\mathbb I_{T>\hat T}]\big)$;
the proof bounds $U_3\le\frac{T}{\gamma R}\gamma^T(\min\{\hat T,T\}+\max\{\frac{\gamma^{\hat T-T}-1}{1-\gamma},0\})$.
""")

theorem('H-T4.7', kind='theorem', label='thm-4-7', title='Dynamic schedule with momentum (Thm 4.7)', statement=r"""
For $\beta<\gamma$, with
$q_t=c_1\gamma^{T+t}\mathbb I_{T\le\hat T}+\gamma^{\hat T-1}c_2\gamma^{T-t}\mathbb I_{T>\hat T}$
(the proof: $c_1=\frac{2}{\gamma(\gamma-\beta^2)}$, $c_2=\frac{\gamma^{2\hat T}}{\gamma-\beta^2}$),
the schedule $\sigma_t^2=\frac1R\sum_i\sqrt{q_i/q_t}$ (Lemma 4.3) and
$T^{dyn}=\lceil O(\frac{2\kappa}{\eta_0}\ln(1+\frac{\eta_0}{\kappa\alpha}))\rceil$:
$\mathrm{ERUB}\le\gamma^T+2\eta_0\alpha\sum_tRq_t\sigma_t^2$ and
$\mathrm{ERUB}_{\min}\le O\big(\frac{\kappa\alpha}{\kappa\alpha+\eta_0}(\frac{\kappa\alpha}{\kappa\alpha+\eta_0}\mathbb I_{T\le\hat T}+\mathbb I_{T>\hat T})\big)$.
The discussion adds: the preferred schedule increases, since $q_t$ decreases for $t\le\hat T$.
""")

theorem('H-T4.8', kind='theorem', label='thm-4-8', title='Utility of PSGD (Thm 4.8)', statement=r"""
Under the conditions of {ref}`Thm 4.1 <thm-4-1>`, with batch size $n=\max\{N\sqrt R,1\}$, a
stochastic gradient $\nabla_t+\sigma_g\xi_t/n$ ($\mathbb E\xi_t=0$,
$\mathbb E\|\xi_t\|^2\le D$) and a schedule with $\sum_t\sigma_t^{-2}=R'$,
$\mathrm{ERUB}=\gamma^T+\alpha_g\sigma_g^2+R'\sum_tq_t\sigma_t^2$ where
$\alpha_g=\frac{D}{2\mu N^2R(f(\theta_1)-f^*)}$.
""")

theorem('H-T4.9', kind='theorem', label='thm-4-9', title='PSGD with momentum (Thm 4.9)', statement=r"""
With batch size $n=\max\{N\sqrt R,1\}$, $U_3$ is replaced by $U_3^g+U_3$ with
$\alpha R'U_3^g\le\alpha_g\sigma_g^2$; the proof bounds $U_3^g\le\kappa\sigma_g^2/G^2$.
""")

theorem('H-T4.10', kind='theorem', label='thm-4-10', title='True risk in high probability (Thm 4.10)', statement=r"""
For a $G$-Lipschitz, $\mu$-strongly convex loss, with probability at least $1-p$ over the
data set, the paper states
$\mathrm{TER}(\theta)\le\sqrt{\frac{2G^2}{\mu N}}\sqrt{f(\theta)-f(\theta^*)}+\frac{4G^2}{p\mu N}$ (Eq. 15).
""")

theorem('H-T4.11-12', kind='theorem', label='thm-4-12', title='Stability and generalisation (Thm 4.11, 4.12)',
        statement=r"""
An $s$-uniformly stable algorithm has expected generalisation gap at most $s$ (Thm 4.11).
The paper states that PGD with $\eta<2/M$ on $M$-smooth, $G$-Lipschitz losses is
$s$-uniformly stable with $s=G^2T\eta/N$ (Thm 4.12), hence
$\mathrm{TER}\le\mathrm{EER}+G^2\eta T/N$.
""")

theorem('W-L2.2', kind='lemma', label='w-lem-2-2', title='Extended advanced composition (W Lemma 2.2)', statement=r"""
If $\mathcal M_i$ is $(\varepsilon_i,\delta_i)$-DP with $\varepsilon_i\in(0,1)$, the
composition is $(\tilde\varepsilon,\tilde\delta)$-DP for any $\delta'\in(0,1)$ with
$\tilde\varepsilon=\sqrt{2\log(1/\delta')\sum_i\varepsilon_i^2}+\sum_i\varepsilon_i\frac{e^{\varepsilon_i}-1}{e^{\varepsilon_i}+1}$
and $\tilde\delta=1-\prod_i(1-\delta_i)+\delta'$.
""")

theorem('W-T4.1', kind='theorem', label='w-thm-4-1', title='Privacy guarantee (W Thm 4.1)', statement=r"""
If $\{\alpha_t\}$ is known in advance and gradients are bounded by $G$, Algorithm 1 is
$(\varepsilon,\delta)$-DP when $\sigma^2=\frac{(16G)^2B_\delta}{n^2\varepsilon^2}\sum_t\alpha_t^{-2}$,
$B_\delta=\log(\frac{16T}{n\delta})\log(\frac{1.25}{\delta})$. If $\alpha_t^2\propto t^p$ then
$\sigma^2\propto T^{1-p}$ for $p<1$ and $\propto\log T$ for $p=1$.
""")

theorem('W-T4.2', kind='theorem', label='w-thm-4-2', title='Convergence of ADP-SGD (W Thm 4.2)', statement=r"""
For $L$-smooth losses with bounded gradients and deterministic $\alpha_t,b_t$, the privacy
part of the bound on $\min_k\mathbb E\|\nabla F(\theta_k)\|^2$ is proportional to
$M(\{\alpha\},\{b\})=\sum_t(\alpha_t/b_t)^2\sum_t\alpha_t^{-2}$ (Eq. 7; Eq. 23 in the appendix).
""")

theorem('W-R4.1', kind='remark', label='w-rem-4-1', title='The optimal relationship (W Remark 4.1)', statement=r"""
For fixed $\{b_t\}$, $\min_\alpha M=M_{adp}=(\sum_tb_t^{-1})^2$ at $\alpha_t^2=b_t$;
$M_{dp}/M_{adp}=T\sum_tb_t^{-2}/(\sum_tb_t^{-1})^2\ge1$; and $\alpha_t\alpha_{T-(t-1)}=b_t$
is said to give the same $M_{adp}$.
""")

theorem('W-P5.1', kind='proposition', label='w-prop-5-1', title='ADP-SGD vs DP-SGD, $b_t=\\sqrt{a+ct}$ (W Prop. 5.1)',
        statement=r"""
For $T\ge5+4a/c$ the privacy terms are
$\frac{\eta dL(16G)^2B_\delta\sqrt T}{2n^2\varepsilon^2\sqrt c}$ for ADP-SGD (Eq. 9) and
$\frac{\eta dL(16G)^2B_\delta\sqrt T\log(1+Tc/a)}{n^2\varepsilon^2\sqrt c}$ for DP-SGD (Eq. 10),
so $M_{dp}/M_{adp}=O(\log T)$.
""")

theorem('W-P5.2', kind='proposition', label='w-prop-5-2', title='ADP vs DP with an adaptive step size (W Prop. 5.2)',
        statement=r"""
With $b_{t+1}^2=b_t^2+\max\{\|\nabla f\|^2,\nu\}$ and the pre-set $\alpha_t=(b_0^2+tC)^{1/4}$,
$C\in[\nu,G^2]$, the privacy terms are $\frac{128G^3\eta dLB_\delta\sqrt T}{n^2\varepsilon^2\nu}$
(ADP-SGD) and $\frac{32G^3\eta dLB_\delta\sqrt T\log(1+T\nu/b_0^2)}{n^2\varepsilon^2\nu}$ (DP-SGD):
an $O(\log T)$ gain.
""")

theorem('X-UNIFY', kind='proposition', label='x-prop-unify', title='One Cauchy-Schwarz allocation', statement=r"""
For positive influences $q_t$ and budgets with $\sum_ts_t^{-2}=R$,
$R\sum_tq_ts_t^2\ge(\sum_t\sqrt{q_t})^2$ with equality iff $s_t^2\propto q_t^{-1/2}$.
Hong et al.'s dynamic schedule is this with $q_t=\gamma^{T-t}\alpha$ (Theorem 4.4), or the
momentum influence (Theorem 4.7); Wu et al.'s $\alpha_t^2=b_t$ is this with $q_t\propto\eta_t^2$.
""")
