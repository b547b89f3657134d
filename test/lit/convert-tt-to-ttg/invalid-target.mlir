// RUN: not sparsecc-opt %s -p 'convert-tt-to-ttg{target="sm_٩٠"}' 2>&1 | filecheck %s --check-prefix=ARABIC
// RUN: not sparsecc-opt %s -p 'convert-tt-to-ttg{target=sm_9O}' 2>&1 | filecheck %s --check-prefix=LETTER
// RUN: not sparsecc-opt %s -p 'convert-tt-to-ttg{target=sm_70}' 2>&1 | filecheck %s --check-prefix=OLD
// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{target=sm_80}' | filecheck %s --check-prefix=OK
// The target option names a GPU sparsecc supports, in ASCII digits: it was once copied into
// ttg.target unchecked ("sm_\D9\A9\D9\A0", which no later stage could use).

// ARABIC: error: invalid options for pass 'convert-tt-to-ttg': unknown target 'sm_٩٠': expected e.g. sm_80 or sm_90
// LETTER: error: invalid options for pass 'convert-tt-to-ttg': unknown target 'sm_9O'
// OLD: error: invalid options for pass 'convert-tt-to-ttg': target sm_70 has no sparse tensor cores
// OK: ttg.target = "sm_80"
builtin.module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    tt.return
  }
}
