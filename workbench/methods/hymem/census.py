"""HyMem's census: light and deep rounds, reflection rounds, deep-tier failures. (``CensusSpec``, run by the generic
census ``workbench.eval.mechanisms``; moved here from it unchanged.)"""
from __future__ import annotations


from .. import census_kit as K


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names = ("deep_questions", "deep_rounds", "light_rounds", "reflection_rounds", "reflections_continued",
             "round_limit_hits", "deep_generator_failures", "deep_selection_fallbacks")
    if not K.traced(c, traces, names):
        return
    deep_q = deep_r = light_r = light_ok = reflect = cont = limit = gen_fail = sel_fb = 0
    for t in traces:
        if t is None:
            continue
        deeps = t.of("deep")
        deep_q += bool(deeps)
        deep_r += len(deeps)
        gen_fail += sum(bool(d.get("error")) for d in deeps)
        sel_fb += sum(d.get("fallback") is True for d in deeps)
        lights = t.of("light")
        light_r += len(lights)
        # an accepted round is one that did not escalate: only finished == 2 asks for the deep module, and in the
        # paper profile 1 (or an unreadable reply, on_failure="code") is accepted too (review turn 4, N2: this
        # counted finished == 0 alone, so an accepted round read as "not judged sufficient")
        light_ok += sum((d.get("escalate") is False) if "escalate" in d else d.get("finished") == 0 for d in lights)
        refl = t.of("reflect")
        reflect += len(refl)
        cont += sum(d.get("done") is False for d in refl)
        limit += sum(bool(d.get("round_limit_hit")) for d in t.of("final"))
    src = "traces"
    if params.get("deep") is False:
        deep_why = "deep=False in the run's parameters"
    else:
        deep_why = (f"the light module's answer was accepted (not escalated: only finished=2 asks for the deep "
                    f"module) in {light_ok} of {light_r} rounds")
    c.put("deep_questions", deep_q, src + " (deep steps)", deep_why)
    c.put("deep_rounds", deep_r, src + " (deep steps)", deep_why)
    c.put("light_rounds", light_r, src + " (light steps)",
          "light=False in the run's parameters" if params.get("light") is False else None)
    if params.get("reflection") is False:
        refl_why = "reflection=False in the run's parameters"
    elif params.get("max_rounds") == 1 and params.get("reflect_last_round") is False:
        refl_why = "max_rounds=1 and reflect_last_round=False in the run's parameters"
    else:
        refl_why = None
    c.put("reflection_rounds", reflect, src + " (reflect steps)", refl_why)
    c.put("reflections_continued", cont, src + " (reflect steps)",
          f"reflection accepted the answer in all {reflect} reflection rounds" if reflect else refl_why)
    c.put("round_limit_hits", limit, src + " (final steps)")
    c.put("deep_generator_failures", gen_fail, src + " (deep steps)")
    c.put("deep_selection_fallbacks", sel_fb, src + " (deep steps)")


CENSUS = K.CensusSpec(
    count,
    headline=(("deep_questions", "questions went deep"), ("reflection_rounds", "reflection rounds")),
    check=("escalations", lambda rows, traces, mems: {
    str(r.get("qa_id")): bool(t.of("deep")) for r, t in zip(rows, traces) if t is not None}),
    check_off=lambda params: ("there is no deep module to escalate to (deep=False)" if params.get("deep") is False
                              else "every round goes deep, so no escalation is decided (light=False)"
                              if params.get("light") is False else None),
)
