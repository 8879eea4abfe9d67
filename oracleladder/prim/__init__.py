"""PRIM's four-dimension diagnosis (docs/prim.md), run beside the ladder on the same families: the
gold primitives' import (`gold`), the probes of Discovery, Generation, Digestion and Execution
(`probe`), the teacher's guidance (`compile`), the judge of a predicted primitive (`judge`) and its
audit (`audit`), the scoring rule (`scoring`), a problem's samples and place (`problems`), the analyses (`analysis`) and their Markdown (`markdown`). The primitive itself is a record (`schemas.prim`)."""
