;; A memory that starts at 2000 pages, above tier A's 1024 (64 MiB).
(module
  (memory (export "memory") 2000)
  (func (export "_start")))
