import random 

