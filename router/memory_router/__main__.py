from memory_router._cli import main

main()
